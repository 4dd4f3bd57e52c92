"""Hypothesis strategies for valid skills (shared by the skills tests)."""

from __future__ import annotations

from hypothesis import strategies as st

from grse_graph.skills import RESOURCE_DIRS, Skill

_FORBIDDEN = "\u2028\u2029\ufeff"

# Any Unicode text the format promises to carry: everything but control characters (except tab
# and newline), surrogates, line/paragraph separators and the BOM.
_chars = st.one_of(
    st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters=_FORBIDDEN),
    st.sampled_from("\n\t -:#'\"{}[]&*!|>%@`"),
)


def texts(min_size: int = 0, max_size: int = 200) -> st.SearchStrategy[str]:
    """Unicode text without the front-matter delimiter."""
    return st.text(_chars, min_size=min_size, max_size=max_size).filter(lambda t: "---" not in t)


_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
# Built from segments rather than `from_regex`, which is several times slower to draw from.
names = st.lists(st.text(_ALNUM, min_size=1, max_size=10), min_size=1, max_size=5).map("-".join)
descriptions = texts(1, 120).filter(lambda t: t.strip() != "")
tool_names = st.text(
    st.characters(
        blacklist_categories=("Cc", "Cs", "Zs", "Zl", "Zp"), blacklist_characters=_FORBIDDEN
    ),
    min_size=1,
    max_size=20,
).filter(lambda t: "---" not in t and not any(c.isspace() for c in t))
user_metadata = st.dictionaries(
    texts(1, 30).filter(lambda k: k.strip() != "" and not k.startswith("grse-")),
    texts(0, 40),
    max_size=3,
)
bookkeeping = st.fixed_dictionaries(
    {},
    optional={
        "grse-utility": st.floats(-1, 1, allow_nan=False).map(repr),
        "grse-provenance": st.sampled_from(["seed", "induced", "refined", "consolidated"]),
        "grse-invocations": st.integers(0, 10**6).map(str),
        "grse-iteration": st.integers(0, 50).map(str),
        "grse-parent-hash": st.binary(min_size=32, max_size=32).map(bytes.hex),
        "grse-agent": names,
    },
)
# Files end in an extension and sub-folders never do, so no path is a prefix of another.
_subdir = st.text(_ALNUM + "_", min_size=1, max_size=8)
_file = st.builds(lambda stem, ext: f"{stem}.{ext}", _subdir, st.sampled_from(["md", "py", "bin"]))
resource_paths = st.one_of(
    st.builds(lambda d, f: f"{d}/{f}", st.sampled_from(RESOURCE_DIRS), _file),
    st.builds(lambda d, s, f: f"{d}/{s}/{f}", st.sampled_from(RESOURCE_DIRS), _subdir, _file),
)
resources = st.dictionaries(resource_paths, st.binary(max_size=64), max_size=3)


@st.composite
def skills(draw: st.DrawFn, name: st.SearchStrategy[str] = names) -> Skill:
    """A random valid skill."""
    metadata = {**draw(user_metadata), **draw(bookkeeping)}
    return Skill(
        name=draw(name),
        description=draw(descriptions),
        body=draw(texts(0, 200)),
        license=draw(st.none() | texts(1, 40).filter(lambda t: t.strip() != "")),
        compatibility=draw(st.none() | texts(1, 80).filter(lambda t: t.strip() != "")),
        allowed_tools=draw(st.lists(tool_names, max_size=4, unique=True)),
        metadata=metadata,
        resources=draw(resources),
    )
