"""The JSON examples of ../shared/seeds, extracted as the documents show them."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Example:
    seed: str
    index: int
    filename: str  # the file name the seed writes it to, or "" for a bare code block
    text: str

    @property
    def id(self):
        return f"{self.seed}#{self.index}{':' + self.filename if self.filename else ''}"


SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
HEREDOC = re.compile(r"cat << EOF > (\S+)\n(.*?)\nEOF", re.S)
MD_JSON = re.compile(r"```json\n(.*?)```", re.S)
ECHO = re.compile(r"\$ echo '(.*?)' > (\S+)", re.S)
RST_JSON = re.compile(r"\.\. code-block:: json\n\n((?:[ \t]+.*\n|\n)+)")


def seed_examples(seeds_dir: Path) -> list[Example]:
    examples = []
    for path in sorted(seeds_dir.glob("*")):
        text = path.read_text(encoding="utf-8")
        found: list[tuple[int, str, str]] = []
        if path.suffix == ".md":
            found += [(m.start(), m.group(1), m.group(2)) for m in HEREDOC.finditer(text)]
            found += [(m.start(), "", m.group(1)) for m in MD_JSON.finditer(text)]
        elif path.suffix == ".rst":
            found += [(m.start(), m.group(2), textwrap.dedent(m.group(1))) for m in ECHO.finditer(text)]
            found += [(m.start(), "", textwrap.dedent(m.group(1))) for m in RST_JSON.finditer(text)]
        for index, (_, filename, body) in enumerate(sorted(found), 1):
            examples.append(Example(path.name, index, filename, body))
    return examples
