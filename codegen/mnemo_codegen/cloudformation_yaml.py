"""CloudFormation templates read as plain YAML: intrinsic-function tags become one-key mappings."""

from __future__ import annotations

from typing import Any

import yaml

#: libyaml's safe loader where PyYAML was built with it: the template is large (every tool's function), and
#: the pure-Python loader takes seconds to read it.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CloudFormationLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    """Reads intrinsic-function tags (!Ref, !Sub, !GetAtt...) as plain one-key mappings ({"Ref": ...})."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return {suffix: loader.construct_scalar(node)}
    if isinstance(node, yaml.SequenceNode):
        return {suffix: loader.construct_sequence(node, deep=True)}
    return {suffix: loader.construct_mapping(node, deep=True)}  # type: ignore[arg-type]


CloudFormationLoader.add_multi_constructor("!", _intrinsic)


def load_template(text: str) -> dict[str, Any]:
    """A template's text as a dict, each intrinsic function a one-key mapping."""
    loaded: dict[str, Any] = yaml.load(text, Loader=CloudFormationLoader)
    return loaded
