"""What is generated from the tool catalog (``mnemo.tools``), and the code that writes it.

``mnemo generate`` (``make docs``) writes, with ``generate``: template.yaml's generated blocks
(``template_gen``, with ``template_names``, ``template_policies``, ``template_alarms`` and
``template_snapstart``; ``cloudformation_yaml`` reads the template back), ``functions/<tool>/app.py``,
docs/tools.md (``docs``), the client's typed methods and catalog.json (``client_gen``), and the counts
the docs quote. ``mnemo docs`` and ``mnemo client-gen`` write one of them each.

This package lives outside ``layers/shared/`` so that the shared Lambda layer does not ship it: no
Lambda runs the generator. The CLI imports it lazily, inside the commands above; it is installed with
the project (``make install``, ``pip install -e .``). It imports only the catalog and the kernel of
``mnemo`` (tests/unit/test_import_rules.py), and the deployment rehearsal checks that the built layer
holds none of its modules (tests/infra/test_rehearsal.py).
"""
