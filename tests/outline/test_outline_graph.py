"""Name resolution across a project, on small projects written inline: what an import reaches when names
collide with the standard library or with each other, and bases that form cycles."""

from __future__ import annotations

from mnemo.outline.graph import Graph, build_graph
from mnemo.outline.languages import extract, get_language


def graph(language: str, files: dict[str, str], go_modules: dict[str, str] | None = None) -> Graph:
    paths = frozenset(files)
    outlines = []
    for path, source in files.items():
        spec = get_language("javascript" if path.endswith(".js") else language)
        outlines.append(extract(spec, path, source.encode(), paths))
    return build_graph(get_language(language), outlines, go_modules)


def targets(built: Graph, source: str, kind: str) -> set[str]:
    (node_id,) = built.find(source)
    return {edge.target for edge in built.relations(node_id) if edge.kind == kind}


def test_go_standard_library_imports_never_reach_project_packages_of_the_same_name() -> None:
    built = graph(
        "go",
        {
            "internal/log/log.go": "package log\n\nfunc Println(v ...any) {}\n",
            "http/client.go": "package http\n\nfunc Get(u string) {}\n",
            "cmd/main.go": 'package main\n\nimport (\n\t"log"\n\t"net/http"\n)\n\n'
            'func main() {\n\tlog.Println("x")\n\thttp.Get("u")\n}\n',
        },
    )
    assert targets(built, "main.main", "calls") == {"native:log.Println", "native:net/http.Get"}


def test_python_standard_library_imports_never_reach_project_modules_of_the_same_name() -> None:
    built = graph(
        "python",
        {
            "config.py": "def dictConfig(c): pass\n",
            "utils.py": "def parseaddr(x): pass\n",
            "path.py": "def join(*a): pass\n",
            "app.py": "import logging.config\nfrom email.utils import parseaddr\nfrom os.path import join\n\n"
            "def main():\n    logging.config.dictConfig({})\n    parseaddr('a')\n    join('a')\n",
        },
    )
    assert targets(built, "app.main", "calls") == {
        "native:logging.config.dictConfig",
        "native:email.utils.parseaddr",
        "native:os.path.join",
    }


def test_of_two_modules_with_one_name_the_importers_neighbour_wins() -> None:
    built = graph(
        "python",
        {
            "scripts/utils.py": "def helper(): pass\n",
            "tools/utils.py": "def helper(): pass\n",
            "tools/main.py": "import utils\nfrom utils import helper\n\ndef run():\n    utils.helper()\n    helper()\n",
        },
    )
    assert targets(built, "main.run", "calls") == {"utils.helper@tools/utils.py"}


def test_typescript_imports_prefer_the_typescript_module_over_its_compiled_javascript() -> None:
    built = graph(
        "typescript",
        {
            "src/cart.js": "class Cart { add() {} }\nexport { Cart };\n",
            "src/cart.ts": "export class Cart { add(): void {} }\n",
            "src/main.ts": "import { Cart } from './cart';\n"
            "export function main() { const c = new Cart(); c.add(); }\n",
        },
    )
    assert targets(built, "src/main.main", "calls") == {"src/cart.Cart@src/cart.ts", "src/cart.Cart.add@src/cart.ts"}


def test_go_types_embedding_each_other_resolve_once_each() -> None:
    names = [f"T{i}" for i in range(8)]
    embedded = "".join(
        f"type {name} struct {{\n" + "".join(f"\t*{other}\n" for other in names if other != name) + "}\n"
        for name in names
    )
    source = (
        "package p\n\ntype Closer interface { Close() error }\n"
        + embedded
        + "func (t *T0) Close() error { t.Missing(); return nil }\n"
    )
    built = graph("go", {"p/a.go": source})
    # every type embeds T0, so every method set holds Close; the missing member is simply not found
    assert targets(built, "p.T5", "implements") == {"p.Closer@p/a.go"}
    assert targets(built, "p.(*T0).Close", "calls") == set()


def test_python_classes_in_a_cycle_of_bases_resolve_once_each() -> None:
    names = [f"C{i}" for i in range(8)]
    source = "".join(
        f"class {name}({', '.join(other for other in names if other != name)}):\n"
        f"    def go(self):\n        self.missing()\n"
        for name in names
    )
    built = graph("python", {"cyc.py": source})
    assert targets(built, "cyc.C3", "extends") == {f"cyc.{n}@cyc.py" for n in names if n != "C3"}
    assert targets(built, "cyc.C3.go", "calls") == set()


INVENTORY = "package inventory\n\nfunc New() int { return 1 }\n"


def test_go_imports_name_project_packages_through_go_mod_only() -> None:
    main = (
        'package main\n\nimport (\n\t"example.com/shop/inventory"\n\tother "github.com/someone/inventory"\n)\n\n'
        "func main() {\n\tinventory.New()\n\tother.New()\n}\n"
    )
    built = graph("go", {"inventory/stock.go": INVENTORY, "cmd/main.go": main}, go_modules={"example.com/shop": "."})
    assert targets(built, "main.main", "calls") == {
        "inventory.New@inventory/stock.go",
        "external:github.com/someone/inventory.New",
    }


def test_a_go_module_path_without_a_dot_is_the_project_not_the_standard_library() -> None:
    main = 'package main\n\nimport "myapp/inventory"\n\nfunc main() {\n\tinventory.New()\n}\n'
    built = graph("go", {"svc/inventory/stock.go": INVENTORY, "svc/cmd/main.go": main}, go_modules={"myapp": "svc"})
    assert targets(built, "main.main", "calls") == {"inventory.New@svc/inventory/stock.go"}


def test_python_modules_under_a_source_root_resolve_and_other_packages_do_not() -> None:
    built = graph(
        "python",
        {
            "src/app/models.py": "def load(): pass\n",
            "utils.py": "def quote(x): pass\n",
            "src/app/main.py": "from app.models import load\nfrom requests.utils import quote\n\n"
            "def run():\n    load()\n    quote('x')\n",
        },
    )
    assert targets(built, "main.run", "calls") == {"models.load@src/app/models.py", "external:requests.utils.quote"}
