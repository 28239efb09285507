// The client against a real `memchentic serve` (issue 34, item 4): every remote
// operation at least once, the access rules, the typed errors and the event stream.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import {
  AuthError,
  ConnectionError,
  ForbiddenError,
  Memchentic,
  MemchenticError,
  NotFoundError,
  ValidationError,
} from "../dist/index.js";
import { freePort, startServer } from "./server.mjs";

let server;
let alice;
let bob;
let admin;

before(async () => {
  server = await startServer({ identities: ["alice", "bob"] });
  alice = new Memchentic({ baseUrl: server.url, apiKey: server.keys.alice });
  bob = new Memchentic({ baseUrl: server.url, apiKey: server.keys.bob });
  admin = new Memchentic({ baseUrl: server.url, apiKey: server.keys.admin });
});

after(async () => {
  await server?.stop();
});

describe("writes and reads", () => {
  it("add then search finds it, with camelCase options sent as the API's fields", async () => {
    const written = await alice.add("Alice prefers green tea in the morning", {
      type: "preference",
      tags: ["drinks"],
      sessionId: "s-tea",
      pathHint: "kitchen",
      metadata: { camelKey: 1, snake_key: 2 },
    });
    assert.equal(written.status, "added");
    assert.ok(written.id);
    const hits = await alice.search("green tea", { limit: 5, includeTrace: true });
    const hit = hits.find((h) => h.id === written.id);
    assert.ok(hit, "search finds the memory just added");
    assert.equal(hit.memory.namespace, "user:alice");
    assert.equal(hit.memory.session_id, "s-tea");
    assert.equal(hit.memory.path_hint, "kitchen");
    assert.deepEqual(hit.memory.tags, ["drinks"]);
    assert.deepEqual(hit.memory.metadata, { camelKey: 1, snake_key: 2 }, "metadata keys are sent as given");
    assert.equal(typeof hit.trace?.score ?? typeof hit.score, "number");
    const opened = await alice.get(written.id, { touch: false });
    assert.equal(opened.content, "Alice prefers green tea in the morning");
    assert.equal(opened.type, "preference");
  });

  it("remember is add; addMany applies the common options to every item", async () => {
    const one = await alice.remember("The office wifi is called Nebula");
    assert.equal(one.status, "added");
    const many = await alice.addMany(
      ["Standup is at 9:30 every weekday", { content: "Retro is on Friday afternoons", tags: ["own"] }],
      { tags: ["meetings"], sessionId: "s-batch" },
    );
    assert.deepEqual(many.map((w) => w.status), ["added", "added"]);
    const listed = await alice.list({ tags: ["meetings"] });
    assert.deepEqual(listed.map((m) => m.content).sort(), ["Standup is at 9:30 every weekday"]);
    const own = await alice.list({ tags: ["own"] });
    assert.equal(own.length, 1);
    assert.equal(own[0].session_id, "s-batch");
    assert.deepEqual(await alice.addMany([]), []);
  });

  it("list filters by type and by metadata (sent as JSON)", async () => {
    await alice.add("The build server lives in rack 7", { type: "resource", metadata: { project: "atlas" } });
    await alice.add("The deploy key rotates monthly", { type: "resource", metadata: { project: "zeus" } });
    const found = await alice.list({ type: "resource", filters: { project: "atlas" } });
    assert.deepEqual(found.map((m) => m.content), ["The build server lives in rack 7"]);
  });

  it("revise, improve, pin, unpin and history", async () => {
    const { id } = await alice.add("The printer is on floor 2", { sessionId: "s-edit" });
    const revised = await alice.revise(id, "The printer is on floor 3", { tags: ["office"] });
    assert.equal(revised.status, "revised");
    assert.equal((await alice.get(id)).content, "The printer is on floor 3");
    const improved = await alice.improve(id, { confidence: 0.4, importance: 0.9 });
    assert.equal(improved.memory?.confidence ?? (await alice.get(id)).confidence, 0.4);
    assert.equal((await alice.get(id)).importance, 0.9);
    assert.equal((await alice.pin(id)).memory?.pinned ?? (await alice.get(id)).pinned, true);
    assert.equal((await alice.get(id)).pinned, true);
    await alice.unpin(id);
    assert.equal((await alice.get(id)).pinned, false);
    const versions = await alice.history(id);
    assert.ok(versions.length >= 3, `versions: ${versions.map((v) => v.op)}`);
    assert.equal(versions[0].op, "add");
    assert.ok(versions.some((v) => v.op === "revise"));
  });

  it("delete and forget: the memory is gone", async () => {
    const a = await alice.add("Temporary note one about parking");
    const b = await alice.add("Temporary note two about lunch");
    assert.equal((await alice.delete(a.id)).status, "deleted");
    assert.equal((await alice.forget(b.id)).status, "deleted");
    await assert.rejects(alice.get(a.id), NotFoundError);
    await assert.rejects(alice.get(b.id), NotFoundError);
  });

  it("deleteAll forgets exactly one scope; an empty scope is refused", async () => {
    const one = await alice.add("Session note: the demo is at noon", { sessionId: "s-gone" });
    const two = await alice.add("Session note: bring the projector", { sessionId: "s-gone" });
    const kept = await alice.add("Session note: keep this one", { sessionId: "s-kept" });
    assert.equal(await alice.deleteAll({ sessionId: "s-gone" }), 2);
    await assert.rejects(alice.get(one.id), NotFoundError);
    await assert.rejects(alice.get(two.id), NotFoundError);
    assert.equal((await alice.get(kept.id)).content, "Session note: keep this one");
    const error = await alice.deleteAll({}).catch((e) => e);
    assert.ok(error instanceof ValidationError, String(error));
    assert.equal(error.status, 422);
  });

  it("restore brings back a memory a supersedes edge hid", async () => {
    const old = await alice.add("The team lunch is on Tuesdays");
    const replacement = await alice.add("Team lunch moved to Thursdays at the canteen");
    await alice.relate(replacement.id, old.id, "supersedes");
    const before = await alice.list({});
    assert.ok(!before.some((m) => m.id === old.id), "a superseded memory leaves list");
    const restored = await alice.restore(old.id);
    assert.equal(restored.status, "restored");
    const after = await alice.list({});
    assert.ok(after.some((m) => m.id === old.id), "the restored memory is listed again");
    assert.equal((await alice.restore(old.id)).status, "unchanged");
  });

  it("manage applies add, revise and delete in order", async () => {
    const target = await alice.add("The parking garage closes at 22:00");
    const results = await alice.manage(
      [
        { op: "add", content: "The garage entrance is on Elm Street", tags: ["parking"] },
        { op: "revise", id: target.id, content: "The parking garage closes at 23:00" },
        { op: "none" },
      ],
      { sessionId: "s-manage" },
    );
    assert.deepEqual(results.map((r) => r.status).slice(0, 2), ["added", "revised"]);
    assert.equal((await alice.get(target.id)).content, "The parking garage closes at 23:00");
    const added = await alice.get(results[0].id);
    assert.deepEqual(added.tags, ["parking"]);
  });
});

describe("access", () => {
  it("bob cannot see alice's memory: NotFoundError with code not_found, and no hit", async () => {
    const { id } = await alice.add("Alice's locker code is behind the poster");
    const error = await bob.get(id).catch((e) => e);
    assert.ok(error instanceof NotFoundError, String(error));
    assert.ok(error instanceof MemchenticError);
    assert.equal(error.code, "not_found");
    assert.equal(error.status, 404);
    assert.equal(error.id, id);
    const hits = await bob.search("locker code poster");
    assert.ok(!hits.some((h) => h.id === id));
    const missing = await alice.get("01NOSUCHMEMORY0000000000000").catch((e) => e);
    assert.equal(missing.code, error.code, "an invisible memory answers like a missing one");
    await assert.rejects(bob.delete(id), NotFoundError);
  });

  it("a bad key is an AuthError; an admin route is a ForbiddenError", async () => {
    const stranger = new Memchentic({ baseUrl: server.url, apiKey: "mck_not-a-key" });
    const error = await stranger.search("anything").catch((e) => e);
    assert.ok(error instanceof AuthError, String(error));
    assert.equal(error.code, "unauthorized");
    assert.equal(error.status, 401);
    const denied = await alice.reset().catch((e) => e);
    assert.ok(denied instanceof ForbiddenError, String(denied));
    assert.equal(denied.code, "admin_required");
    assert.equal(denied.status, 403);
  });

  it("me names the key's identity", async () => {
    const me = await alice.me();
    assert.equal(JSON.stringify(me).includes("user:alice"), true, JSON.stringify(me));
  });
});

describe("errors", () => {
  it("a validation error carries the field, the code and the status", async () => {
    const error = await alice.add("Importance out of range", { importance: 2 }).catch((e) => e);
    assert.ok(error instanceof ValidationError, String(error));
    assert.equal(error.code, "invalid");
    assert.equal(error.field, "importance");
    assert.equal(error.status, 422);
    assert.match(error.message, /importance/);
    assert.equal(error.name, "ValidationError");
  });

  it("an unknown namespace is a ValidationError naming the namespace", async () => {
    const error = await alice.add("Somewhere odd", { namespace: "nowhere:at-all" }).catch((e) => e);
    assert.ok(error instanceof ValidationError, String(error));
    assert.match(error.code, /invalid/);
  });

  it("no server: a ConnectionError; a bad id is refused before sending", async () => {
    const port = await freePort();
    const offline = new Memchentic({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "x", timeout: 5000 });
    const error = await offline.stats().catch((e) => e);
    assert.ok(error instanceof ConnectionError, String(error));
    assert.equal(error.code, "connection_error");
    assert.equal(error.status, 0);
    assert.throws(() => alice.get(""), (e) => e instanceof ValidationError && e.field === "id");
  });

  it("the caller's own abort rejects with the platform's AbortError, not a client error", async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await alice.search("anything", {}, { signal: controller.signal }).catch((e) => e);
    assert.equal(error.name, "AbortError");
    assert.ok(!(error instanceof MemchenticError));
  });
});

describe("graph", () => {
  it("relate, edges, neighbors, deleteEdge", async () => {
    const a = await alice.add("Project Atlas uses PostgreSQL for storage");
    const b = await alice.add("PostgreSQL backups run nightly at 02:00");
    const edge = await alice.relate(a.id, b.id, "related_to", { strength: 0.7, metadata: { why: "db" } });
    assert.equal(edge.kind, "related_to");
    assert.equal(edge.strength, 0.7);
    assert.deepEqual(edge.metadata, { why: "db" });
    const edges = await alice.edges(a.id, { kind: "related_to" });
    assert.deepEqual(edges.map((e) => e.id), [edge.id]);
    const near = await alice.neighbors(a.id, { depth: 1 });
    assert.deepEqual(near.map((n) => n.memory.id), [b.id]);
    assert.equal(near[0].depth, 1);
    assert.equal(await alice.deleteEdge(edge.id), true);
    assert.deepEqual(await alice.edges(a.id), []);
  });

  it("recall and entities follow the entities of a memory", async () => {
    const { id } = await alice.add("Marta from Lisbon joins the platform team", { entities: ["Marta"] });
    const hits = await alice.recall({ entity: "Marta" });
    assert.ok(hits.some((h) => h.id === id), JSON.stringify(hits.map((h) => h.id)));
    const found = await alice.entities();
    assert.ok(JSON.stringify(found).toLowerCase().includes("marta"), JSON.stringify(found));
  });

  it("ask cites the memory that answers", async () => {
    const { id } = await alice.add("The VPN gateway address is vpn.example.org");
    const answer = await alice.ask("What is the VPN gateway address?");
    assert.equal(answer.question, "What is the VPN gateway address?");
    assert.ok(answer.passages.some((p) => p.memory.id === id), JSON.stringify(answer.passages.map((p) => p.memory.id)));
  });

  it("consolidate with dryRun changes nothing", async () => {
    const before = (await alice.list({ limit: 500 })).length;
    const report = await alice.consolidate({ dryRun: true });
    assert.equal(report.dry_run, true);
    assert.ok(Array.isArray(report.clusters));
    assert.equal((await alice.list({ limit: 500 })).length, before);
  });
});

describe("sessions, context and learning", () => {
  it("recordTurn, addMessage, getHistory, listSessions, summarizeSession", async () => {
    const first = await alice.recordTurn("user", "I am planning a trip to Kyoto in April", { sessionId: "trip" });
    assert.equal(first.session_id, "trip");
    await alice.addMessage({ role: "assistant", content: "April is cherry blossom season there", metadata: { m: 1 } }, { sessionId: "trip" });
    const turns = await alice.getHistory("trip", { limit: 10 });
    assert.deepEqual(turns.map((t) => t.role), ["user", "assistant"]);
    assert.deepEqual(turns[1].metadata, { m: 1 });
    const sessions = await alice.listSessions();
    assert.ok(sessions.some((s) => s.session_id === "trip" && s.turns === 2), JSON.stringify(sessions));
    assert.ok(!(await bob.listSessions()).some((s) => s.session_id === "trip"), "bob sees none of alice's sessions");
    const summary = await alice.summarizeSession("trip");
    assert.ok(["added", "updated"].includes(summary.status), summary.status);
    assert.ok(summary.id);
  });

  it("addWorking and workingMemory: a key replaces its value", async () => {
    await alice.addWorking("Current task: draft the Q3 report", { sessionId: "work", key: "task" });
    await alice.addWorking("Current task: review the Q3 report", { sessionId: "work", key: "task" });
    const live = await alice.workingMemory("work");
    assert.deepEqual(live.map((m) => m.content), ["Current task: review the Q3 report"]);
    assert.deepEqual(await bob.workingMemory("work"), []);
  });

  it("context: sections and the prompt text hold the memory", async () => {
    await alice.add("Alice is allergic to peanuts", { type: "fact" });
    const ctx = await alice.context("what is alice allergic to", { budgetTokens: 500 });
    assert.ok(ctx.text.includes("Alice is allergic to peanuts"), ctx.text);
    assert.ok(ctx.sections.length > 0);
    assert.ok(ctx.tokens <= 500);
    const same = await alice.buildContext("what is alice allergic to", { budgetTokens: 500 });
    assert.ok(same.text.includes("Alice is allergic to peanuts"));
  });

  it("learn extracts memories from a conversation", async () => {
    const results = await alice.learn(
      [{ role: "user", content: "I moved to Berlin last month and I prefer cycling to work." }],
      { sessionId: "learn-1" },
    );
    assert.ok(Array.isArray(results) && results.length > 0, JSON.stringify(results));
    const contents = results.map((r) => r.memory?.content ?? "").join(" | ");
    assert.match(contents, /Berlin|cycling/, contents);
  });
});

describe("upkeep and export", () => {
  it("stats counts only what the key may read", async () => {
    const mine = await alice.stats();
    const theirs = await bob.stats();
    assert.deepEqual(Object.keys(mine.by_namespace), ["user:alice"]);
    assert.ok(!Object.keys(theirs.by_namespace).includes("user:alice"), JSON.stringify(theirs));
    assert.equal(mine.live, (await alice.list({ limit: 1000 })).length);
  });

  it("gc deletes what expired long ago (a Date option is sent as ISO 8601); dryRun only reports", async () => {
    const old = await alice.add("A note that expired in 2001", { expiresAt: new Date("2001-01-01T00:00:00Z") });
    assert.equal(old.status, "added");
    assert.match((await alice.get(old.id)).expires_at, /^2001-01-01/);
    const dry = await alice.gc({ dryRun: true });
    assert.equal(dry.dry_run, true);
    assert.ok(dry.expired.includes(old.id), JSON.stringify(dry));
    assert.equal((await alice.get(old.id)).id, old.id, "a dry run deletes nothing");
    const done = await alice.gc();
    assert.ok(done.expired.includes(old.id));
    await assert.rejects(alice.get(old.id), NotFoundError);
    const report = await admin.maintain({ dryRun: true });
    assert.equal(report.dry_run, true);
    assert.equal(typeof report.gc, "object");
  });

  it("export yields the records the key may read", async () => {
    const { id } = await alice.add("Exported: the archive password hint is a bird");
    const secret = await bob.add("Bob's export-only note about trains");
    const lines = [];
    for await (const line of alice.export()) lines.push(line);
    const text = JSON.stringify(lines);
    assert.ok(text.includes(id));
    assert.ok(!text.includes(secret.id), "alice's export holds nothing of bob's");
  });
});

describe("events", () => {
  it("events lists stored events the key may see", async () => {
    const { id } = await alice.add("An event-worthy memory about kites");
    const mine = await alice.events({ types: ["memory.added"], limit: 1000 });
    assert.ok(mine.some((e) => e.memory_id === id && e.type === "memory.added"));
    const theirs = await bob.events({ types: ["memory.added"], limit: 1000 });
    assert.ok(!theirs.some((e) => e.memory_id === id), "bob sees none of alice's events");
  });

  it("streamEvents is an async iterator of live events; abort ends it", async () => {
    // resume after the newest stored event, so the stream holds exactly what follows
    const since = (await alice.events({ limit: 1000 })).at(-1)?.id ?? "0";
    const controller = new AbortController();
    const stream = alice.streamEvents({ since, types: ["memory.added"], signal: controller.signal });
    const first = stream.next(); // opens the stream
    const bobSince = (await bob.events({ limit: 1000 })).at(-1)?.id ?? "0";
    const bobStream = bob.streamEvents({ since: bobSince, types: ["memory.added"], signal: controller.signal });
    const bobFirst = bobStream.next();
    await alice.add("A memory that should not be streamed: it is a pin", { tags: ["x"] }).then((w) => alice.pin(w.id));
    const written = await alice.add("A live event about balloons");
    const { value, done } = await first;
    assert.equal(done, false);
    assert.equal(value.type, "memory.added");
    assert.equal(value.namespace, "user:alice");
    const second = await stream.next();
    assert.equal(second.value.memory_id, written.id, "only memory.added events, in order");
    assert.notEqual(value.memory_id, written.id);
    controller.abort();
    assert.deepEqual(await stream.next(), { value: undefined, done: true });
    const fromBob = await bobFirst;
    assert.equal(fromBob.done, true, "bob's stream got none of alice's events before the abort");
  });

  it("since='0' replays the log; breaking out of the loop closes the stream", async () => {
    const seen = [];
    for await (const event of alice.streamEvents({ since: "0", types: ["memory.added"] })) {
      seen.push(event);
      if (seen.length === 3) break;
    }
    assert.equal(seen.length, 3);
    assert.ok(seen.every((e) => e.type === "memory.added"));
    assert.ok(seen[0].id < seen[1].id && seen[1].id < seen[2].id, "oldest first");
  });
});

describe("directory", () => {
  it("an admin makes a group; a member writes to it, a stranger cannot read it", async () => {
    const ids = await admin.directory.identities();
    assert.ok(ids.some((i) => i.name === "alice"));
    const team = await admin.directory.createGroup("ts-team", { admins: ["alice"] });
    assert.equal(team.kind, "group");
    const members = await admin.directory.members("group:ts-team");
    assert.ok(members.length >= 1);
    const shared = await alice.add("The ts-team retro board is on the wiki", { namespace: "group:ts-team" });
    assert.equal(shared.status, "added");
    await assert.rejects(bob.get(shared.id), NotFoundError);
    const teams = await admin.directory.teams("group");
    assert.ok(teams.some((t) => t.name === "ts-team"));
    assert.deepEqual(await bob.directory.invitations(), []);
    assert.throws(() => admin.directory.members("team-without-kind"), ValidationError);
  });

  it("invitations: an org admin invites, lists, withdraws; the invitee sees and accepts", async () => {
    await admin.directory.createOrg("ts-org", { admins: ["alice"] });
    const first = await alice.directory.addMember("org:ts-org", "bob");
    assert.equal(first.status, "invited", JSON.stringify(first));
    const pending = await alice.directory.teamInvitations("org:ts-org", { limit: 10 });
    assert.deepEqual(pending.map((i) => i.named ?? i.identity_id).length, 1);
    assert.equal((await bob.directory.invitations({ kind: "org" })).length, 1);
    assert.deepEqual(await bob.directory.invitations({ kind: "group" }), []);
    assert.equal(await alice.directory.withdraw("org:ts-org", "bob"), true);
    assert.deepEqual(await bob.directory.invitations(), []);
    await alice.directory.addMember("org:ts-org", "bob");
    const joined = await bob.directory.accept("org:ts-org");
    assert.equal(joined.identity_id, "bob");
    const members = await admin.directory.members("org:ts-org");
    assert.ok(members.some((m) => m.identity_id === "bob"), JSON.stringify(members));
  });
});

describe("directory administration", () => {
  it("identities, renames, removal, declines and grants", async () => {
    const erin = await admin.directory.createIdentity("erin", "agent");
    assert.equal(erin.kind, "agent");
    const renamed = await admin.directory.renameIdentity("agent:erin", "erin-2");
    assert.equal(renamed.name, "erin-2");
    assert.ok((await admin.directory.identities("agent")).some((i) => i.id === erin.id));
    await admin.directory.createGroup("ts-renamed", { admins: ["alice"], members: ["bob"] });
    const team = await admin.directory.renameTeam("group:ts-renamed", "ts-renamed-2");
    assert.equal(team.name, "ts-renamed-2");
    assert.equal(await admin.directory.removeMember("group:ts-renamed-2", "bob"), true);
    assert.ok(!(await admin.directory.members("group:ts-renamed-2")).some((m) => m.identity_id === "bob"));
    await admin.directory.createOrg("ts-declined", { admins: ["alice"] });
    await alice.directory.addMember("org:ts-declined", "bob");
    assert.equal(await bob.directory.decline("org:ts-declined"), true);
    assert.deepEqual(await bob.directory.invitations(), []);
    const grant = await admin.directory.grant("federated:ts-org:alice", "bob");
    assert.equal(grant.grantee, (await admin.directory.identities("user")).find((i) => i.name === "bob").id);
    assert.equal((await admin.directory.grants("federated:ts-org:alice")).length, 1);
    assert.equal(await admin.directory.revoke("federated:ts-org:alice", "bob"), true);
    assert.deepEqual(await admin.directory.grants("federated:ts-org:alice"), []);
  });
});

describe("reset", () => {
  it("an admin key empties the store", async () => {
    const deleted = await admin.reset();
    assert.ok(deleted > 10, `deleted ${deleted}`);
    assert.deepEqual(await alice.list({}), []);
  });
});
