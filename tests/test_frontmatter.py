"""One frontmatter mechanism (kit/frontmatter.py) for SKILL.md and HOOK.md: the same rule gives the
same message at the same line in both."""

from __future__ import annotations

from pathlib import Path

from kit.documents import split_frontmatter
from kit.frontmatter import Key, check_keys, key_line, unknown_keys
from kit.hooks.spec import validate as validate_hook
from kit.skills.validate import validate_skill


def _skill(text: str, folder: str = "tidy") -> list[str]:
    meta, body, _ = split_frontmatter(text, "skills/tidy/SKILL.md")
    return [str(p) for p in validate_skill(meta, body, folder=folder, text=text, size=len(text),
                                           path="skills/tidy/SKILL.md")]


def _hook(text: str, tmp_path: Path, folder: str = "tidy"):
    meta, _, _ = split_frontmatter(text, "hooks/tidy/HOOK.md")
    (tmp_path / folder).mkdir(exist_ok=True)
    (tmp_path / folder / "handler.py").write_text("def handle(event):\n    return None\n")
    return validate_hook(meta, folder, "workspace", tmp_path / folder, text)


def test_a_skill_and_a_hook_share_the_rules_and_their_words(tmp_path):
    skill = _skill("---\nname: Tidy\ndescription: d\nalways: maybe\ncolour: red\n---\nbody\n")
    hook = _hook("---\nname: Tidy\ndescription: d\nevents: [heartbeat]\nenabled: maybe\ncolour: red\n---\n",
                 tmp_path)
    name = "'name' 'Tidy' may only use lowercase letters a-z, digits 0-9 and hyphens"
    assert skill == [f"skills/tidy/SKILL.md:2: {name}",
                     "skills/tidy/SKILL.md:4: 'always' must be true or false, not 'maybe'",
                     "skills/tidy/SKILL.md:5: unknown frontmatter key 'colour' (ignored)"]
    assert hook.errors == (name, "'enabled' must be true or false, not 'maybe'")
    assert hook.warnings == ("unknown frontmatter key 'colour' (ignored)",)
    assert hook.line == 2 and hook.enabled is False  # a refused value does not switch the hook on

    skill = _skill("---\nname: other\ndescription: d\n---\nbody\n")
    hook = _hook("---\nname: other\ndescription: d\nevents: [heartbeat]\n---\n", tmp_path)
    assert skill == ["skills/tidy/SKILL.md:2: 'name' 'other' must equal the folder name 'tidy'"]
    assert hook.errors == ("'name' 'other' must equal the folder name 'tidy'",) and hook.name == "tidy"


def test_check_keys_reports_each_kind_at_its_line_and_returns_the_good_values():
    text = ("---\ntitle: 3\nshort: abcdef\nflag: true\ntags: [a, 1]\nmeta: x\nwait: 0\nlimit: 2.5\n"
            "none:\n---\n")
    meta, _, _ = split_frontmatter(text, "X.md")
    keys = {
        "title": Key("text"), "short": Key("text", max_chars=3), "flag": Key("bool"), "tags": Key("strings"),
        "meta": Key("mapping"), "wait": Key("number", positive=True, message="'{key}' must be > 0, not {value!r}"),
        "limit": Key("number"), "none": Key("text", nullable=True), "needed": Key("text", required=True),
    }
    good, problems = check_keys(meta, keys, text=text, area="x", path="X.md")
    assert good == {"flag": True, "limit": 2.5}
    assert [str(p) for p in problems] == [
        "X.md:2: 'title' must be a string",
        "X.md:3: 'short' is 6 characters, the limit is 3",
        "X.md:5: 'tags' must be a string or a list of strings",
        "X.md:6: 'meta' must be a mapping of keys to values",
        "X.md:7: 'wait' must be > 0, not 0",
        "X.md: 'needed' is required",
    ]
    lenient = check_keys(meta, {"meta": Key("mapping", severity="warning")}, text=text, area="x", path="X.md")[1]
    assert [(p.severity, p.line) for p in lenient] == [("warning", 6)]  # the file loads without it
    assert [str(p) for p in unknown_keys({"flag": 1, "odd": 2}, frozenset({"flag"}), text=text, area="x",
                                         path="X.md")] == ["X.md: unknown frontmatter key 'odd' (ignored)"]


def test_key_line_looks_only_in_the_frontmatter():
    text = "---\nname: a\n---\nlicense: not a key, a line of the body\n"
    assert key_line(text, "name") == 2
    assert key_line(text, "license") is None
    assert key_line("no frontmatter\nname: x\n", "name") is None
