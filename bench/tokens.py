"""How close the block budget's token estimate (mnemo.files.tokens.count_tokens) is to real BPE tokenizers.

    python bench/tokens.py [--claude-tokenizer PATH] [--no-fit] [--smoke]

References, all offline (nothing is downloaded when this runs):

* ``cl100k_base`` (GPT-4, GPT-3.5) and ``o200k_base`` (GPT-4o, o-series) from
  the ``bpe-openai`` package, whose wheels ship both encodings' data
  (``pip install -e ".[bench]"``, or ``pip install bpe-openai==0.1.4``);
* optionally, with ``--claude-tokenizer``, the ``tokenizer.json`` that the
  ``anthropic`` SDK shipped up to 0.38 (Claude 2 era: Anthropic says it is not
  accurate for Claude 3 and later), read with ``tokenizers``. To get it:
  ``pip download --no-deps anthropic==0.34.0 && unzip -p anthropic-0.34.0-*.whl
  anthropic/tokenizer.json > /tmp/claude-tokenizer.json``.

Corpora, each cut into units (a file, or a paragraph: text between blank lines):

* English prose: README.md and docs/*.md except the generated docs/tools.md, per
  file and per paragraph of at least 80 characters;
* Python code: layers/shared/mnemo/**/*.py, per file;
* JSON: the repository's JSON files (bench/results/ less this script's and
  bench/blocks.py's), every tool's input schema, and each spec example, per unit;
* CJK (Chinese, Japanese, Korean) and accented Latin (French, German, Spanish,
  Portuguese, Polish, Vietnamese, Czech, Turkish) paragraphs written for this
  benchmark, per paragraph.

For each unit the relative error is (estimate - real) / real; reported per
corpus and tokenizer: the mean signed error, the mean and 95th percentile of
its absolute value, and the overall ratio (sum of estimates / sum of real
counts). Then a grid search fits the rule's constants to cl100k_base and o200k_base
(mean absolute error, each corpus and tokenizer weighted equally), once freely
and once never counting low in total on any corpus, and shows the error the
fitted constants would give. Writes bench/results/tokens.json.

--smoke: the first 6 units of each corpus and a grid of the rule's constants one step either side of
today's (729 rules); results to a temporary folder (bench/common.py). ``bpe-openai`` is an extra that
`make install` leaves out, so where it is missing a smoke run counts with a stand-in, bge-small's
WordPiece tokenizer (shipped with the local model, read with ``tokenizers``), and says so: the figures are
then no comparison with any model's tokenizer, only the harness running (a full run still stops and asks
for bpe-openai).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from itertools import product
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parse_args, table, write_results
from mnemo.files import tokens as estimate_module
from mnemo.files.tokens import count_tokens

ROOT = Path(__file__).resolve().parents[1]
OWN_RESULTS = {"tokens.json", "blocks.json"}

CJK = [
    "记忆服务为智能体保存长期记忆。每个代理都有自己的记忆块，项目的共享记忆块需要写入者角色才能修改。",
    "固定的记忆块会在每一轮对话开始时加载到系统提示中，所以它们的总长度必须控制在令牌预算之内。",
    "如果写入会超出预算，服务会返回一个结构化的错误，说明当前用量、上限、本次写入的大小以及建议：压缩或取消固定。",
    "订单数据保存在 PostgreSQL 16 中；发布在每周二进行。所有新服务必须使用 Python 3.12。",
    "エージェントは会話のたびにすべてを忘れてしまいます。Mnemo は記憶と組織の知識をツールとして提供します。",
    "ピン留めされたブロックは順番に連結され、システムプロンプトの先頭に置かれます。予算を超える書き込みは拒否されます。",
    "ワークスペースのファイルはプロジェクトごとに S3 バケットに保存され、すべてのバージョンが保持されます。",
    "에이전트는 세션 사이에 모든 것을 잊어버립니다. Mnemo는 계층별로 사실을 기억하고 불러오는 도구를 제공합니다.",
    "고정된 블록의 총 토큰 수는 에이전트마다 10만 개로 제한되며, 쓰기 전에 항상 확인됩니다.",
    "프로젝트의 공유 블록은 작성자 역할이 있어야 변경할 수 있고, 모든 버전은 기록으로 남습니다.",
    "决策：订单服务使用事件溯源。原因：审计要求保留每一次状态变化。负责人：王芳。",
    "デプロイ手順：テストが通ったら、ステージングで確認し、火曜日に本番へリリースします。",
]
ACCENTED = [
    "Les agents oublient tout d'une session à l'autre. Mnemo leur donne des outils pour mémoriser et "
    "retrouver des faits, par couches : agent, utilisateur, projet, équipe, organisation.",
    "Un bloc épinglé est chargé à chaque tour ; leur total, en jetons, ne doit pas dépasser le budget. "
    "Au-delà, l'écriture est refusée avant d'être faite, avec les chiffres et un conseil : compacter ou désépingler.",
    "Agenten vergessen zwischen zwei Sitzungen alles. Gepinnte Blöcke werden der Reihe nach in den "
    "Systemprompt geladen; die Gesamtgröße wird vor jedem Schreiben gegen das Budget geprüft.",
    "Änderungen an gemeinsamen Projektblöcken brauchen die Schreibrolle; jede Version bleibt in der Historie erhalten.",
    "Los agentes lo olvidan todo entre sesiones. Los bloques fijados se cargan en cada turno y su tamaño "
    "total, en tokens, se comprueba antes de cada escritura: si se supera el presupuesto, la operación falla.",
    "Decisão: os pedidos ficam no PostgreSQL 16. Razão: transações e consultas analíticas no mesmo banco. "
    "Responsável: João Gonçalves, equipe de pagamentos.",
    "Przypięte bloki są ładowane do kontekstu w ustalonej kolejności; zapis, który przekroczyłby budżet, "
    "zostaje odrzucony z informacją, ile miejsca zostało.",
    "Các tác nhân quên mọi thứ giữa các phiên làm việc. Khối được ghim sẽ được nạp vào lời nhắc hệ thống "
    "theo thứ tự, và tổng số token phải nằm trong ngân sách.",
    "Změny sdílených bloků projektu vyžadují roli zapisovatele; každá verze zůstává v historii a lze ji přečíst.",
    "Ajanlar oturumlar arasında her şeyi unutur. Sabitlenmiş blokların toplam token sayısı, her yazmadan "
    "önce bütçeye göre kontrol edilir.",
    "Résumé : la base « commandes » migre vers PostgreSQL ; échéance fin février ; propriétaire : Hélène Dupré.",
    "Straße, Größe, Übergabe, Maßnahme: Umlaute und ß kommen in fast jedem deutschen Satz vor, auch in Fachtexten.",
]


@dataclass(frozen=True)
class Rule:
    """The constants of tokens.py's rule; the defaults reproduce count_tokens exactly."""

    word_chars: int = 11
    digit_chars: int = 3
    space_chars: int = 15
    punct_chars: int = 4
    #: Half tokens per CJK, kana, hangul or emoji character, and per other non-ASCII character.
    wide_halves: int = 2
    other_halves: int = 2


_PIECE = estimate_module._PIECE
#: CJK, kana, hangul and fullwidth forms: the rule charges them like any non-ASCII character, the fit apart.
_WIDE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3040-\u30ff]")


@dataclass(frozen=True)
class Profile:
    """A text's pieces as the rule sees them: run lengths per kind, and non-ASCII character counts."""

    letters: tuple[tuple[int, int], ...]
    digits: tuple[tuple[int, int], ...]
    spaces: tuple[tuple[int, int], ...]
    punct: tuple[tuple[int, int], ...]
    wide: int
    other: int


def profile(text: str) -> Profile:
    runs: dict[str, Counter[int]] = {kind: Counter() for kind in ("letters", "digits", "spaces", "punct")}
    wide = other = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        first = piece[0]
        if first.isascii():
            if first.isalpha():
                runs["letters"][len(piece)] += 1
            elif first.isdigit():
                runs["digits"][len(piece)] += 1
            elif match.lastgroup == "glue":
                continue
            elif first.isspace():
                runs["spaces"][len(piece)] += 1
            else:
                runs["punct"][len(piece)] += 1
        elif _WIDE.match(piece) or ord(first) > 0xFFFF:
            wide += 1
        else:
            other += 1
    frozen = {kind: tuple(sorted(counter.items())) for kind, counter in runs.items()}
    return Profile(frozen["letters"], frozen["digits"], frozen["spaces"], frozen["punct"], wide, other)


def _runs(runs: tuple[tuple[int, int], ...], per: int) -> int:
    return sum(count * math.ceil(length / per) for length, count in runs)


def estimate(shape: Profile, rule: Rule) -> int:
    """count_tokens with the rule's constants as parameters (checked equal to it at the defaults)."""
    halves = 2 * (
        _runs(shape.letters, rule.word_chars)
        + _runs(shape.digits, rule.digit_chars)
        + _runs(shape.spaces, rule.space_chars)
        + _runs(shape.punct, rule.punct_chars)
    )
    halves += rule.wide_halves * shape.wide + rule.other_halves * shape.other
    return math.ceil(halves / 2)


def paragraphs(text: str, minimum: int = 80) -> list[str]:
    return [part.strip() for part in re.split(r"\n\s*\n", text) if len(part.strip()) >= minimum]


def json_units() -> list[str]:
    from mnemo.tools.registry import load_catalog

    units = []
    for path in sorted(ROOT.glob("**/*.json")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith((".venv/", ".mnemo/", ".aws-sam/", "build/")) or path.name in OWN_RESULTS:
            continue
        if relative.startswith("bench/results/") or relative.startswith(("layers/", "infra/", "tests/")):
            units.append(path.read_text())
    for tool in load_catalog().values():
        units.append(json.dumps(tool.request.model_json_schema(by_alias=True)))
        units += [json.dumps(example) for _, example in tool.examples()]
    return units


def corpora() -> dict[str, list[str]]:
    prose_files = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "tools.md")]
    prose = [path.read_text() for path in prose_files]
    code = [path.read_text() for path in sorted((ROOT / "layers/shared/mnemo").glob("**/*.py"))]
    return {
        "English prose, per file": prose,
        "English prose, per paragraph": [p for text in prose for p in paragraphs(text)],
        "Python code, per file": [text for text in code if text.strip()],
        "JSON, per file or value": json_units(),
        "CJK, per paragraph": CJK,
        "accented Latin, per paragraph": ACCENTED,
    }


def stats(estimates: list[int], reals: list[int]) -> dict[str, float]:
    errors = [(e - r) / r for e, r in zip(estimates, reals, strict=True) if r > 0]
    absolute = sorted(abs(error) for error in errors)
    return {
        "units": len(errors),
        "realTokens": sum(reals),
        "estimatedTokens": sum(estimates),
        "meanError": statistics.fmean(errors),
        "meanAbsError": statistics.fmean(absolute),
        "p95AbsError": absolute[min(len(absolute) - 1, math.ceil(0.95 * len(absolute)) - 1)],
        "ratio": sum(estimates) / sum(reals),
    }


def tokenizers(claude: Path | None, stand_in: bool = False) -> dict[str, Callable[[str], int]]:
    """The reference tokenizers; with ``stand_in`` (smoke mode) and no bpe-openai, bge-small's WordPiece."""
    try:
        import bpe_openai
    except ImportError:
        if not stand_in:
            sys.exit('bpe-openai is not installed: pip install -e ".[bench]" (or pip install bpe-openai==0.1.4)')
        from tokenizers import Tokenizer

        from mnemo.adapters.local.embedders import bge_model_dir

        print("bpe-openai is not installed: a stand-in counts (bge-small's WordPiece tokenizer)", file=sys.stderr)
        wordpiece = Tokenizer.from_file(str(bge_model_dir() / "tokenizer.json"))
        return {STAND_IN: lambda text: len(wordpiece.encode(text, add_special_tokens=False).ids)}
    found: dict[str, Callable[[str], int]] = {}
    for name in ("cl100k_base", "o200k_base"):
        encoding = bpe_openai.get_encoding(name)
        found[name] = lambda text, encoding=encoding: len(encoding.encode(text))
    if claude is not None:
        from tokenizers import Tokenizer

        loaded = Tokenizer.from_file(str(claude))
        found["claude-legacy"] = lambda text: len(loaded.encode(text, add_special_tokens=False).ids)
    return found


FIT_TARGETS = ("cl100k_base", "o200k_base")
#: The smoke run's reference where bpe-openai is not installed.
STAND_IN = "stand-in: bge-small WordPiece"
#: The grid of constants searched: (word, digit, space, punct, wide, other) ranges.
GRID = (range(4, 13), range(2, 4), range(2, 17), range(1, 5), range(1, 5), range(1, 5))


def smoke_grid(rule: Rule) -> tuple[range, ...]:
    """Each of ``rule``'s constants, one step either side (at least 1)."""
    return tuple(range(max(1, value - 1), value + 2) for value in asdict(rule).values())


def fit(
    shapes: dict[str, list[Profile]],
    reals: dict[str, dict[str, list[int]]],
    grid: tuple[range, ...] = GRID,
    targets: tuple[str, ...] = FIT_TARGETS,
) -> dict[str, tuple[Rule, float]]:
    """The constants of ``grid`` with the least mean absolute error against ``targets`` (cl100k_base and
    o200k_base), each corpus and tokenizer weighted equally (per-file prose left out: its paragraphs stand
    for it): the best overall ("closest"), and the best among those that never count fewer tokens than
    either tokenizer in total on any corpus ("conservative": a budget that counts low lets a context overflow)."""
    names = [name for name in shapes if name != "English prose, per file"]
    best: dict[str, tuple[float, Rule]] = {}
    for word, digit, space, punct, wide, other in product(*grid):
        rule = Rule(word, digit, space, punct, wide, other)
        errors, lowest = [], math.inf
        for name in names:
            estimates = [estimate(shape, rule) for shape in shapes[name]]
            for target in targets:
                measured = stats(estimates, reals[target][name])
                errors.append(measured["meanAbsError"])
                lowest = min(lowest, measured["ratio"])
        loss = statistics.fmean(errors)
        for label, allowed in (("closest", True), ("conservative", lowest >= 1.0)):
            if allowed and (label not in best or loss < best[label][0]):
                best[label] = (loss, rule)
    return {label: (rule, loss) for label, (loss, rule) in best.items()}


def pct(value: float) -> str:
    return f"{100 * value:+.1f}%"


def rows_for(results: dict[str, dict[str, dict[str, float]]]) -> list[list[Any]]:
    rows = []
    for corpus, by_tokenizer in results.items():
        for name, s in by_tokenizer.items():
            rows.append(
                [
                    corpus,
                    name,
                    int(s["units"]),
                    int(s["realTokens"]),
                    pct(s["meanError"]),
                    f"{100 * s['meanAbsError']:.1f}%",
                    f"{100 * s['p95AbsError']:.1f}%",
                    f"{s['ratio']:.3f}",
                ]
            )
    return rows


HEADERS = ["corpus", "tokenizer", "units", "real tokens", "mean err", "mean |err|", "p95 |err|", "ratio"]


def measure(
    units: dict[str, list[str]], counters: dict[str, Callable[[str], int]], count: Callable[[str], int]
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, list[int]]]]:
    results: dict[str, dict[str, dict[str, float]]] = {}
    reals: dict[str, dict[str, list[int]]] = {}
    for corpus, texts in units.items():
        estimates = [count(text) for text in texts]
        results[corpus] = {}
        for name, counter in counters.items():
            real = reals.setdefault(name, {}).setdefault(corpus, [counter(text) for text in texts])
            results[corpus][name] = stats(estimates, real)
    return results, reals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claude-tokenizer", type=Path, help="a tokenizer.json of the legacy Claude tokenizer")
    parser.add_argument("--no-fit", action="store_true", help="skip the grid search of new constants")
    args = parse_args(parser, {})

    units = corpora()
    if args.smoke:
        units = {corpus: texts[:6] for corpus, texts in units.items()}
    shapes = {corpus: [profile(text) for text in texts] for corpus, texts in units.items()}
    current = Rule()
    mismatched = [
        text[:40]
        for corpus, texts in units.items()
        for text, shape in zip(texts, shapes[corpus], strict=True)
        if estimate(shape, current) != count_tokens(text)
    ]
    if mismatched:
        sys.exit(f"the benchmark's copy of the rule differs from count_tokens on {len(mismatched)} units")
    counters = tokenizers(args.claude_tokenizer, stand_in=args.smoke)
    targets = tuple(name for name in FIT_TARGETS if name in counters) or (STAND_IN,)
    results, reals = measure(units, counters, count_tokens)
    print(f"count_tokens (tokens.py: {asdict(current)}) against {', '.join(counters)}")
    print(table(HEADERS, rows_for(results)))

    payload: dict[str, Any] = {
        "references": {
            "cl100k_base": "bpe-openai 0.1.4 (bundled encoding)",
            "o200k_base": "bpe-openai 0.1.4 (bundled encoding)",
            **({"claude-legacy": str(args.claude_tokenizer)} if args.claude_tokenizer else {}),
        }
        if STAND_IN not in counters
        else {STAND_IN: "smoke run without bpe-openai: bge-small's tokenizer.json (not a comparison)"},
        "rule": asdict(current),
        "results": results,
    }
    if not args.no_fit:
        payload["fitted"] = {}
        grid = smoke_grid(current) if args.smoke else GRID
        for label, (fitted, loss) in fit(shapes, reals, grid, targets).items():
            proposed, _ = measure(units, counters, lambda text, fitted=fitted: estimate(profile(text), fitted))
            print(f"\n{label} fit to {' and '.join(targets)} (mean |err| {100 * loss:.1f}%): {asdict(fitted)}")
            print(table(HEADERS, rows_for(proposed)))
            payload["fitted"][label] = {
                "targets": targets,
                "rule": asdict(fitted),
                "loss": loss,
                "results": proposed,
            }
    path = write_results("tokens", payload)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
