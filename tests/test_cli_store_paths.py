"""What the CLI does with the ``--store`` it is given (issue 45, item 7; issue 42):
a read command on a path where no store is fails and creates nothing, only the
commands that write a first memory may make one; a libpq keyword/value string is a
PostgreSQL store, never a file named after its password, and no error shows the
password; ``--filter`` that is not JSON says so, with the parser's position."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memchentic import Memory
from memchentic.cli import app
from memchentic.errors import ValidationError
from memchentic.settings import Settings
from memchentic.store import is_libpq_string, open_store

runner = CliRunner()

#: Commands that only work on a store that exists (their arguments, if any).
READS = [
    ["search", "tea"], ["list"], ["get", "01ABCDEFGHJKMNPQRSTVWXYZ00"], ["stats"],
    ["export", "-"], ["history", "01ABCDEFGHJKMNPQRSTVWXYZ00"], ["context", "tea"],
    ["ask", "who drinks tea"], ["session", "list"], ["check"], ["keys", "list"],
    ["delete", "01ABCDEFGHJKMNPQRSTVWXYZ00"], ["gc"],
]  # fmt: skip
#: A libpq connection string to a server that is not there (port 1), with a password.
SECRET = "hunter2-do-not-echo"
NOWHERE = f"host=127.0.0.1 port=1 dbname=mem user=me password={SECRET} connect_timeout=1"


@pytest.mark.parametrize("command", READS, ids=lambda c: " ".join(c))
def test_a_read_command_on_a_missing_store_fails_and_creates_nothing(
    tmp_path: Path, command: list[str]
):
    missing = tmp_path / "no" / "such" / "dir" / "x.db"
    result = runner.invoke(app, [*command, "--store", str(missing), "--embedder", "hash"])
    assert result.exit_code == 2, result.output
    assert f"no store at {missing}" in result.output
    assert not (tmp_path / "no").exists()


def test_a_write_command_makes_the_store_and_reads_then_find_it(tmp_path: Path):
    store = str(tmp_path / "new" / "x.db")
    added = runner.invoke(app, ["add", "Sam drinks green tea", "--store", store,
                                "--embedder", "hash"])  # fmt: skip
    assert added.exit_code == 0, added.output
    found = runner.invoke(app, ["search", "tea", "--store", store, "--embedder", "hash"])
    assert found.exit_code == 0 and "Sam drinks green tea" in found.output


def test_a_filter_that_is_not_json_says_so_with_the_position(tmp_path: Path):
    store = str(tmp_path / "m.db")
    Memory(store=store, embedder="hash").close()
    for command in (["search", "tea"], ["list"]):
        bad = runner.invoke(app, [*command, "--filter", "{bad", "--store", store,
                                  "--embedder", "hash"])  # fmt: skip
        assert bad.exit_code == 2
        assert "filter: is not valid JSON: Expecting property name enclosed in double quotes " \
               "at line 1 column 2 (character 2)" in bad.output, bad.output  # fmt: skip
    listed = runner.invoke(app, ["list", "--filter", "[1]", "--store", store])
    assert listed.exit_code == 2 and "filter: must be a JSON object" in listed.output


def test_a_libpq_keyword_string_is_postgres_and_never_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    assert is_libpq_string(NOWHERE)
    assert not is_libpq_string("memory.db") and not is_libpq_string("x=y.db")
    for command in (["search", "tea"], ["add", "Sam drinks tea"], ["stats"]):
        result = runner.invoke(app, [*command, "--store", NOWHERE, "--embedder", "hash"])
        assert result.exit_code != 0, result.output
        assert "cannot connect to host=127.0.0.1" in result.output, result.output
        assert SECRET not in result.output and "password=***" in result.output
    # a credential in what would be a file name: refused, nothing made
    for location in (f"./password={SECRET}", f"host =127.0.0.1 bogus={SECRET}"):
        result = runner.invoke(app, ["add", "Sam drinks tea", "--store", location,
                                     "--embedder", "hash"])  # fmt: skip
        assert result.exit_code == 2 and SECRET not in result.output, result.output
    assert os.listdir(tmp_path) == []


def test_open_store_takes_a_keyword_string_to_a_real_postgres(postgres_stores):
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    located = postgres_stores.location("kv")  # the server's URL and ?schema= (or &schema=)
    schema = re.search(r"[?&]schema=(\w+)", located).group(1)  # type: ignore[union-attr]
    url = re.sub(r"[?&]schema=\w+", "", located)
    keywords = f"{make_conninfo(**conninfo_to_dict(url))} schema={schema}"
    with Memory(store=keywords, embedder="hash") as mem:
        written = mem.add("Sam drinks green tea", user_id="sam")
        assert [h.id for h in mem.search("green tea", user_id="sam")] == [written.id]
        assert mem.store.location.startswith("host=") or "dbname=" in mem.store.location
    with Memory(store=postgres_stores.location("kv"), embedder="hash") as same:  # the URL
        assert [r.content for r in same.list(user_id="sam")] == ["Sam drinks green tea"]
    with pytest.raises(ValidationError) as bad:
        open_store(f"{keywords} schema=Not-A-Name", Settings())
    assert bad.value.field == "store"
