"""Every relative link in the README, docs/ and the results folders' READMEs resolves to a file of the
repository (and an anchor into a markdown page to one of its headings), and no page sends a reader to a
file outside it (a clone has no ../shared)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "results").glob("*/README.md")),
    *sorted((ROOT / "results").glob("*/notes.md")),
]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#+ (.+)$", page.read_text(), re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    text = page.read_text()
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve()
        if not path.exists() or not path.is_relative_to(ROOT):
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_points_outside_the_repository(page):
    text = page.read_text()
    assert "shared/" not in text and "design.md" not in text, page.name
