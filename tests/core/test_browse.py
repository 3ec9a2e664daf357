"""A directory view listed in pieces (pages, levels, probes) answers exactly what a view computed
from every key at once would: same rows, same order, same cut."""

from __future__ import annotations

from collections import Counter
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bench.metrics import RequestCounter
from s3memory.core.listing import Tree, render_listing
from s3memory.core.paths import memory_path
from s3memory.crypto import OVERHEAD, LocalKeyProvider, plaintext_size
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket
from tests.conftest import STORAGE_FORMAT, key_of, plant, prefix_of
from tests.support.bucket import BUCKET, MASTER_KEY, empty_bucket, stored_keys
from tests.support.listings import ShortListings

pytestmark = [pytest.mark.takes_format]

CUT_NOTE_END = "rows shown. View a subdirectory to see the rest.]"


def expected_view(s3: Any, memory: S3Memory, path: str) -> str:
    """The answer for the directory ``path`` rendered from a listing of every key at once."""
    directory = memory_path(path)
    tree = Tree()
    for key in stored_keys(s3, prefix_of(memory, path)):
        size = s3.head_object(Bucket=BUCKET, Key=key)["ContentLength"]
        stored = memory.placed.layout.path_of_key(key)
        assert stored is not None, key
        tree.add_file(stored.relative_to(directory), plaintext_size(size))
    return render_listing(path, directory.canonical, tree)


def views_found_first(s3: Any, memory: S3Memory, path: str) -> list[str]:
    """With private names, the answers a view of ``path`` cut near the cap may give: it shows the
    entries its listing found first, in key order, which is no longer name order (docs/format-v2.md),
    the first level's before the second's, directory by directory in name order. Each is rendered
    from the first of those entries."""
    directory = memory_path(path)
    levels: tuple[list[tuple[tuple[str, ...], int | None]], ...] = ([], [])  # (relative path, size or None)
    for key in stored_keys(s3, prefix_of(memory, path)):
        stored = memory.placed.layout.path_of_key(key)
        assert stored is not None, key
        relative = stored.relative_to(directory)
        size = plaintext_size(s3.head_object(Bucket=BUCKET, Key=key)["ContentLength"])
        for depth in (1, 2):
            if len(relative) >= depth:
                step = (relative[:depth], size if len(relative) == depth else None)
                if step not in levels[depth - 1]:
                    levels[depth - 1].append(step)
    by_directory = sorted(levels[1], key=lambda step: step[0][0])  # stable: key order within each
    steps = [*levels[0], *by_directory]
    views = []
    for count in range(len(steps) + 1):
        tree = Tree()
        for relative, size in steps[:count]:
            if size is None:
                tree.add_directory(relative)
            else:
                tree.add_file(relative, size)
        views.append(render_listing(path, directory.canonical, tree))
    return views


def fits(memory: S3Memory, path: str) -> bool:
    """True if the key of ``path`` is within S3's key limit (with private names, names are longer)."""
    try:
        key_of(memory, path)
    except CommandError:
        return False
    return True


# Names that sort around '/': a listing in key order puts `notes.md` and `notes-x/...` before
# `notes/...`, while a view lists `notes/` first; hidden names must stay hidden.
_LONG = st.builds(
    lambda number, suffix: f"{'y' * 400}{number}{suffix}",  # forty rows pass the view cap
    st.integers(min_value=0, max_value=40),
    st.sampled_from(["", ".md", "-x", " x"]),
)
_NAMES = st.one_of(
    st.sampled_from(
        ["notes", "notes.md", "notes-x", "notes x", "note", "a", "a-", "a.b", ".hidden", "node_modules", "z"]
    ),
    _LONG,
)
_PATHS = st.lists(
    st.lists(_NAMES, min_size=1, max_size=4).map("/".join), min_size=1, max_size=60, unique=True
)


@pytest.mark.slow
@pytest.mark.fuzz
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    paths=_PATHS,
    page_size=st.integers(min_value=1, max_value=9),
    server_page=st.one_of(st.none(), st.integers(min_value=1, max_value=9)),
    view=st.sampled_from(["/memories", "/memories/notes", "/memories/a"]),
)
@example(
    paths=["notes x", "notes-x", "notes.md", "notes/a"], page_size=1, server_page=None, view="/memories"
)  # two pages held back by `notes`
@example(
    paths=[f"{'y' * 400}{number}" for number in range(41)], page_size=3, server_page=None, view="/memories"
)  # a cut
def test_a_view_listed_in_pieces_answers_what_a_view_of_everything_would(
    s3: Any, paths: list[str], page_size: int, server_page: int | None, view: str
) -> None:
    """``page_size`` is what the view asks a page to hold; a ``server_page`` server answers at most
    that many entries a page and shows a common prefix again where a resumed listing starts inside
    it (``support/listings.py``)."""
    if server_page is None:
        view_of_everything_at_once(s3, s3, paths, page_size, view)
        return
    client = boto3.client("s3", region_name="us-east-1")
    with ShortListings(client, server_page):
        view_of_everything_at_once(s3, client, paths, page_size, view)


def view_of_everything_at_once(s3: Any, client: Any, paths: list[str], page_size: int, view: str) -> None:
    """Asserts that the view of ``paths`` by a memory of ``client`` is the view of every key at once."""
    # a path cannot be both a file and a directory: drop files that another path lies below
    files = [path for path in paths if not any(other.startswith(path + "/") for other in paths)]
    empty_bucket(s3)
    memory = S3Memory(
        Bucket(client, BUCKET, page_size=page_size),
        "alice",
        LocalKeyProvider(MASTER_KEY),
        storage_format=STORAGE_FORMAT,
    )
    files = [path for path in files if fits(memory, f"/memories/{path}")]  # S3's key limit
    for index, path in enumerate(files):
        s3.put_object(Bucket=BUCKET, Key=key_of(memory, f"/memories/{path}"), Body=b"\0" * (101 + index))
    if view != "/memories" and not any(path.startswith(view[len("/memories/") :] + "/") for path in files):
        return  # no such directory
    answer = memory.run({"command": "view", "path": view})
    expected = expected_view(s3, memory, view)
    if STORAGE_FORMAT != 1 and expected.endswith(CUT_NOTE_END):
        assert answer.endswith(CUT_NOTE_END) and answer in views_found_first(s3, memory, view)
    else:
        assert answer == expected


def short_pages(
    s3: Any, page: int, paths: list[str], size: int | None = None
) -> tuple[S3Memory, ShortListings, RequestCounter]:
    """A format-1 memory (names in key order) holding ``paths`` (a file's size is ``size``, else its index), whose
    server answers at most ``page`` entries a listing page and shows a common prefix again where a
    resumed listing starts inside it (``support/listings.py``); its server, and a counter of its
    requests from here on (placing the memory is not counted)."""
    client = boto3.client("s3", region_name="us-east-1")
    server = ShortListings(client, page)
    memory = S3Memory(Bucket(client, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), storage_format=1)
    memory.resolve()
    for index, path in enumerate(paths):
        s3.put_object(
            Bucket=BUCKET,
            Key=key_of(memory, path),
            Body=b"\0" * (OVERHEAD + (index if size is None else size)),
        )
    server.asked.clear()
    return memory, server, RequestCounter(client)


def counted(requests: RequestCounter) -> Counter[str]:
    """The requests counted by operation, but the access record's write; the counter reset."""
    calls = requests.calls
    requests.reset()
    del calls["PutObject"]
    return calls


def probes(server: ShortListings) -> list[str]:
    """The prefixes of the one-key listings (a probe for a directory) the server was asked for."""
    return [asked["Prefix"] for asked in server.asked if asked["MaxKeys"] == 1]


def test_a_level_resumed_inside_a_directory_that_shows_it_again_lists_it_once(s3: Any) -> None:
    """AWS shows a common prefix again when a delimited listing starts after a key inside it;
    ``b`` is given out once, so its level 2 is listed once; level 1 is listed with a delimiter
    from where the first page stopped (b/2 and b/3 would fill a page of their own)."""
    memory, server, requests = short_pages(
        s3, 2, ["/memories/a", "/memories/b/1", "/memories/b/2", "/memories/b/3", "/memories/c"]
    )
    answer = memory.run({"command": "view", "path": "/memories"})
    assert answer == expected_view(s3, memory, "/memories")
    assert server.repeated == [prefix_of(memory, "/memories/b")]
    # the first page (a, b/1); level 1 after b/1 (b/ again, c); level 2 of b after b/1 (b/2, b/3)
    assert counted(requests) == Counter(ListObjectsV2=3)


@pytest.mark.parametrize("name", ["notes", "n"])
def test_a_shorter_name_held_back_by_two_pages_is_probed_once(s3: Any, name: str) -> None:
    """Keys ``notes x``, ``notes-x``, ``notes.md`` sort before ``notes/...``: a page that ends on one
    of them holds ``notes`` back; when the next page does not get past it either, one one-key
    listing tells whether ``notes/`` is a directory."""
    paths = [f"/memories/{name} x", f"/memories/{name}-x", f"/memories/{name}.md", f"/memories/{name}/a"]
    memory, server, requests = short_pages(s3, 1, paths)
    answer = memory.run({"command": "view", "path": "/memories"})
    assert answer == expected_view(s3, memory, "/memories")
    assert probes(server) == [prefix_of(memory, f"/memories/{name}")]
    # the first page, four of level 1 (the probe after the second), one of notes' level 2
    assert counted(requests) == Counter(ListObjectsV2=6)


def test_a_shorter_name_the_next_page_gets_past_is_not_probed(s3: Any) -> None:
    memory, server, requests = short_pages(s3, 1, ["/memories/notes.md", "/memories/notes/a"])
    answer = memory.run({"command": "view", "path": "/memories"})
    assert answer == expected_view(s3, memory, "/memories")
    assert probes(server) == []
    assert counted(requests) == Counter(ListObjectsV2=3)  # the first page, level 1, notes' level 2


def test_a_probe_that_finds_no_directory_shows_none(s3: Any) -> None:
    memory, server, requests = short_pages(s3, 1, ["/memories/notes x", "/memories/notes-x", "/memories/z"])
    answer = memory.run({"command": "view", "path": "/memories"})
    assert answer == expected_view(s3, memory, "/memories")
    assert "/memories/notes/" not in answer
    assert probes(server) == [prefix_of(memory, "/memories/notes")]
    assert counted(requests) == Counter(ListObjectsV2=4)  # the first page, two of level 1, the probe


@pytest.mark.parametrize(
    ("held", "listings"),
    [
        ("/memories/notes x", 5),  # the first page, three of level 1, the probe
        ("/memories/notes x/1", 6),  # and the level 2 of `notes x`
    ],
)
def test_a_page_of_one_key_moves_the_listing_to_it(s3: Any, held: str, listings: int) -> None:
    """Level 1's pages hold one entry each: ``notes x`` (a key or a common prefix) holds ``notes``
    back once a page has reached it, and the page after (``notes-x``) does not get past it, so
    ``notes`` is probed then."""
    memory, server, requests = short_pages(s3, 1, ["/memories/a", held, "/memories/notes-x", "/memories/z"])
    answer = memory.run({"command": "view", "path": "/memories"})
    assert answer == expected_view(s3, memory, "/memories")
    assert probes(server) == [prefix_of(memory, "/memories/notes")]
    assert counted(requests) == Counter(ListObjectsV2=listings)


def test_a_hidden_name_held_back_is_not_probed(s3: Any) -> None:
    memory, server, requests = short_pages(
        s3, 1, ["/memories/.h x", "/memories/.h-x", "/memories/.h/a", "/memories/z"]
    )
    answer = memory.run({"command": "view", "path": "/memories"})
    assert answer.splitlines()[1:] == ["4.0K\t/memories", "3B\t/memories/z"]
    assert probes(server) == []
    assert counted(requests) == Counter(ListObjectsV2=4)  # the first page, three of level 1


def test_a_directory_seen_before_is_listed_once_when_its_first_page_holds_it_all(s3: Any) -> None:
    """A path last seen as a directory is listed with its own key as the prefix: when the page gets
    past the directory (its last key, ``b0``, is past it), that page is its view."""
    memory, _server, requests = short_pages(
        s3, 3, ["/memories/b/1", "/memories/b/2", "/memories/b0", "/memories/b1"]
    )
    memory.run({"command": "view", "path": "/memories"})
    requests.reset()
    answer = memory.run({"command": "view", "path": "/memories/b"})
    assert answer == expected_view(s3, memory, "/memories/b")
    assert counted(requests) == Counter(ListObjectsV2=1)


def test_a_directory_seen_before_that_its_first_page_stops_inside_is_listed_again(s3: Any) -> None:
    memory, _server, requests = short_pages(s3, 2, ["/memories/b/1", "/memories/b/2", "/memories/b/3"])
    memory.run({"command": "view", "path": "/memories"})
    requests.reset()
    answer = memory.run({"command": "view", "path": "/memories/b"})
    assert answer == expected_view(s3, memory, "/memories/b")
    # the page at the path's key (b/1, b/2), the directory's first page, the rest of its level 1
    assert counted(requests) == Counter(ListObjectsV2=3)


_LONG_NAME = "d" * 84  # a listing below /memories/ddd…d charges each key or common prefix 100 characters


@pytest.mark.slow
@pytest.mark.scale
@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize(
    ("page", "after_the_first", "listings", "cut"),
    [
        (160, 160, 3, False),  # 16,000 charged after one page: within the cap, so the next page is listed
        (161, 161, 2, True),  # 16,100: more than the answer could show, so no further page
        (81, 162, 3, True),  # 8,100 after one page, 16,200 after two
    ],
)
def test_a_level_lists_pages_only_while_the_keys_listed_could_be_shown(
    s3: Any, level: int, page: int, after_the_first: int, listings: int, cut: bool
) -> None:
    """Hidden names show nothing, but each key or common prefix a page of a level holds is charged
    the least row it could make (here 100 characters): a level lists no further page once those of
    its pages listed could fill the 16,000-character view (helper-44). The directory is viewed
    itself (its level 1), or as level 2 of /memories."""
    directory = f"/memories/{_LONG_NAME}"
    hidden = page + after_the_first
    directories = [f"{directory}/.d{index:03d}/x" for index in range(page + 40)]  # 40 in the second page
    files = [f"{directory}/.f{index:03d}" for index in range(hidden - len(directories))]
    memory, server, requests = short_pages(s3, page, [*directories, *files, f"{directory}/z"])
    answer = memory.run({"command": "view", "path": directory if level == 1 else "/memories"})
    rows = [f"4.0K\t{directory}"] if level == 1 else ["4.0K\t/memories", f"4.0K\t{directory}/"]
    if cut:
        rows.append(
            f"[Listing cut near 16,000 characters: {len(rows)} rows shown. View a subdirectory to see the rest.]"
        )
    else:
        rows.append(f"{hidden}B\t{directory}/z")
    assert answer.splitlines()[1:] == rows
    if level == 1:  # a file is looked for first, then the pages
        assert counted(requests) == Counter(GetObject=1, ListObjectsV2=listings)
    else:  # and level 1 of /memories after the first page: the directory again (AWS), nothing else
        assert server.repeated == [prefix_of(memory, directory)]
        assert counted(requests) == Counter(ListObjectsV2=listings + 1)


def named(count: int, length: int, below: str = "", inside: str = "") -> list[str]:
    """``count`` paths below /memories/``below``, each of a name of ``length`` characters (then ``inside``)."""
    return [f"/memories/{below}{index:03d}{'n' * (length - 3)}{inside}" for index in range(count)]


@pytest.mark.slow
@pytest.mark.scale
@pytest.mark.parametrize(
    ("paths", "page", "listings"),
    [
        # files of rows of 100 characters with their newline: the first page gives out all but its
        # last name (a later key may still be a directory of that name); the 160th row makes 16,000
        (named(170, 86), 161, 2),
        (named(170, 86), 162, 1),
        # directories, of rows of 100 (their rows at level 2 are never reached): all of a page given out
        (named(170, 83, inside="/x"), 160, 2),
        (named(170, 83, inside="/x"), 161, 1),
        # level 2 of e, after e's row of 18: rows of 100, then level 1 after the first page (e/ again)
        (named(170, 84, below="e/"), 160, 3),
        (named(170, 84, below="e/"), 161, 2),
        # level 2 of e, rows of 131: e's row and 122 of them make 16,000, not more, so the 123rd is
        # listed (a page of level 2) when the first page held back the 123rd
        (named(130, 115, below="e/"), 123, 3),
        (named(130, 115, below="e/"), 124, 2),
    ],
)
def test_a_cut_view_lists_until_the_rows_found_pass_the_cap(
    s3: Any, paths: list[str], page: int, listings: int
) -> None:
    """Each entry given out adds the least row it could make; the view lists no further page once
    those pass 16,000 characters (its answer is cut there anyway), and no sooner: here a row is
    exactly its least (a one-character size), so one row more or less in the sum changes the count."""
    memory, _server, requests = short_pages(s3, page, paths, size=1)
    answer = memory.run({"command": "view", "path": "/memories"})
    assert answer == expected_view(s3, memory, "/memories")
    assert answer.endswith(CUT_NOTE_END)
    assert counted(requests) == Counter(ListObjectsV2=listings)


def test_a_key_of_no_memory_path_below_a_name_makes_no_directory(s3: Any) -> None:
    """A key that maps to no memory path (here a backslash, which no memory path holds) shows
    nothing, not even the directory it would lie in."""
    memory, _server, requests = short_pages(s3, 2, ["/memories/a", "/memories/c"])
    s3.put_object(Bucket=BUCKET, Key=prefix_of(memory, "/memories/b") + "x\\y", Body=b"\0" * OVERHEAD)
    answer = memory.run({"command": "view", "path": "/memories"})
    assert answer.splitlines()[1:] == ["4.0K\t/memories", "0B\t/memories/a", "1B\t/memories/c"]
    assert counted(requests) == Counter(ListObjectsV2=2)  # the first page (a, b/x\y), then level 1


def test_level_two_is_listed_only_from_where_the_first_page_stopped(s3: Any) -> None:
    """The first page held all of ``a`` (not listed again), stopped inside ``b`` (listed from there:
    ``b/1/``, which only the first page shows) and before ``c`` (listed from its start)."""
    memory, _server, requests = short_pages(
        s3, 2, ["/memories/a/1", "/memories/b/1/x", "/memories/b/2", "/memories/c/1"]
    )
    answer = memory.run({"command": "view", "path": "/memories"})
    assert answer == expected_view(s3, memory, "/memories")
    assert counted(requests) == Counter(ListObjectsV2=4)  # the first page, level 1, b's and c's level 2


@pytest.mark.parametrize(
    ("paths", "listings"),
    [
        (["/memories/b/1", "/memories/b0", "/memories/b1"], 1),  # the page at b's key got past b/
        (["/memories/b/1", "/memories/b/2", "/memories/b/3"], 3),  # it stopped inside: b/ is listed
    ],
)
def test_a_delete_of_a_directory_seen_before_lists_it_as_a_view_does(
    s3: Any, paths: list[str], listings: int
) -> None:
    memory, server, _requests = short_pages(s3, 2, paths)
    memory.run({"command": "view", "path": "/memories"})
    server.asked.clear()
    assert memory.run({"command": "delete", "path": "/memories/b"}).startswith(
        "Successfully deleted /memories/b"
    )
    assert stored_keys(s3, prefix_of(memory)) == [key_of(memory, path) for path in paths if "/b/" not in path]
    below = [asked for asked in server.asked if asked["Prefix"].startswith(prefix_of(memory))]
    assert len(below) == listings


@pytest.mark.parametrize("page", [1, 1000])
def test_a_directory_of_hidden_entries_only_exists_and_shows_no_row(s3: Any, page: int) -> None:
    """Files in a hidden directory below ``d`` (and a key of no memory path) show nothing, but ``d``
    exists: its view lists its own row, whether its first page held every key or not."""
    memory, _server, requests = short_pages(s3, page, ["/memories/d/.h/1", "/memories/d/.h/2"])
    s3.put_object(Bucket=BUCKET, Key=prefix_of(memory, "/memories/d") + "x\\y", Body=b"\0" * OVERHEAD)
    answer = memory.run({"command": "view", "path": "/memories/d"})
    assert answer.splitlines()[1:] == ["4.0K\t/memories/d"]
    # a file is looked for first; then one page, or the first page and level 1 after it
    assert counted(requests) == Counter(GetObject=1, ListObjectsV2=1 if page > 3 else 3)


def test_a_directory_viewed_once_is_listed_first_the_next_time(s3: Any) -> None:
    memory, _server, requests = short_pages(s3, 1000, ["/memories/d/e/f", "/memories/d/g"])
    first = memory.run({"command": "view", "path": "/memories/d"})
    assert counted(requests) == Counter(GetObject=1, ListObjectsV2=1)  # not known: a file looked for first
    for path in ("/memories/d", "/memories/d/e"):  # then d and its directories are known
        answer = memory.run({"command": "view", "path": path})
        assert counted(requests) == Counter(ListObjectsV2=1)
        assert answer == (first if path == "/memories/d" else expected_view(s3, memory, path))


def test_a_delete_of_a_directory_not_seen_before_looks_for_a_file_first_then_lists_it(s3: Any) -> None:
    memory, server, requests = short_pages(s3, 2, ["/memories/b/1", "/memories/b/2", "/memories/b/3"])
    assert memory.run({"command": "delete", "path": "/memories/b"}).startswith(
        "Successfully deleted /memories/b"
    )
    assert stored_keys(s3, prefix_of(memory)) == []
    below = [asked["Prefix"] for asked in server.asked if asked["Prefix"].startswith(prefix_of(memory))]
    assert below == [prefix_of(memory, "/memories/b")] * 2  # its pages: b/1 and b/2, then b/3
    assert requests.calls["HeadObject"] >= 1  # the file looked for first


def test_a_file_written_where_a_directory_seen_before_was_emptied_is_found(s3: Any) -> None:
    """A path last seen as a directory is listed first; when nothing lies below it any more, the
    file is looked for, and one written there since the listing (by another process) is deleted."""
    memory, _server, _requests = short_pages(s3, 2, ["/memories/b/1"])
    memory.run({"command": "view", "path": "/memories"})
    s3.delete_object(Bucket=BUCKET, Key=key_of(memory, "/memories/b/1"))
    written: list[str] = []

    def write_the_file(parsed: dict[str, Any], **_: Any) -> None:  # after the listing at b's key
        if parsed.get("Prefix") == key_of(memory, "/memories/b") and not written:
            written.append(plant(s3, memory, "/memories/b", "written meanwhile"))

    memory.store.bucket.client.meta.events.register("after-call.s3.ListObjectsV2", write_the_file)
    assert memory.run({"command": "delete", "path": "/memories/b"}) == "Successfully deleted /memories/b"
    assert written and stored_keys(s3, prefix_of(memory)) == []


def test_names_settled_before_a_directory_are_given_out_only_after_the_next_page(s3: Any) -> None:
    """The first page stops inside ``n/``: ``n`` is given out, but names after it (``n-000…``,
    whose keys sort before ``n/``) only once the next page is listed; their rows (100 characters
    each) pass the cap there, so the view costs the first page and one of level 1, no fewer."""
    names = [f"/memories/n-{index:03d}{'n' * 81}" for index in range(170)]
    memory, _server, requests = short_pages(
        s3, 171, [*names, "/memories/n/x", "/memories/n/y", "/memories/z"], size=1
    )
    answer = memory.run({"command": "view", "path": "/memories"})
    assert answer == expected_view(s3, memory, "/memories")
    assert answer.endswith(CUT_NOTE_END)
    assert counted(requests) == Counter(ListObjectsV2=2)


def test_a_directory_whose_first_page_holds_no_memory_path_is_found_by_the_pages_after(s3: Any) -> None:
    memory, _server, _requests = short_pages(s3, 1, ["/memories/d/z"])
    s3.put_object(Bucket=BUCKET, Key=prefix_of(memory, "/memories/d") + "a\\b", Body=b"\0" * OVERHEAD)
    answer = memory.run({"command": "view", "path": "/memories/d"})
    assert answer.splitlines()[1:] == ["4.0K\t/memories/d", "0B\t/memories/d/z"]
