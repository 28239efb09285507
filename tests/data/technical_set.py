"""A development set of technical sessions (issue 33, item 4): an engineer and
an agent over several sessions, in long messages holding code, configuration,
logs and stack traces; and questions that name the identifiers in words or in
other forms ("the retry backoff setting" for ``RETRY_BACKOFF_MS``, "the user
profile loader" for ``UserProfileLoader``), each with the ids of the turns that
hold its answer.

Written for this set by hand (the services, code and incidents are invented);
nothing is taken from a public benchmark. Turns that mention neighbouring
identifiers (``RETRY_MAX_ATTEMPTS`` beside ``RETRY_BACKOFF_MS``,
``UserProfileCache`` beside ``UserProfileLoader``) are the distractors. The
engineer speaks with role ``user``, the agent with role ``assistant``.
"""

# ruff: noqa: E501
from __future__ import annotations

from tests.data.dialogues import Conversation, Question, Session

# fmt: off

ROLES = {"Dana": "user", "agent": "assistant", "Ravi": "user", "assistant": "assistant"}

BILLING = Conversation(
    "billing",
    ("Dana", "agent"),
    (
        Session("bill-0", "2026-01-26T10:00:00", (
            ("b40", "Dana", """First day on the billing repo. How do I run it locally? The README mentions docker compose but the file has two profiles:

```yaml
services:
  db:
    image: postgres:16
    environment: {POSTGRES_PASSWORD: dev, POSTGRES_DB: billing}
    ports: ["5433:5432"]
  redis:
    image: redis:7
    profiles: [cache]
  worker:
    build: .
    command: python -m billing.worker
    profiles: [workers]
```"""),
            ("b41", "agent", """Run `docker compose --profile cache up -d db redis`, then `make dev` which creates the virtualenv, runs the migrations (`alembic upgrade head`) and starts the API on port 8000. The `workers` profile is only needed for background jobs (invoice sync, dunning); start it with `docker compose --profile workers up worker` when you work on those. Note the database listens on 5433 on your machine, so `DATABASE_URL=postgresql://postgres:dev@localhost:5433/billing`."""),
            ("b42", "Dana", """`make test` hangs forever on `test_invoice_sync_end_to_end`. Any idea?"""),
            ("b43", "agent", """That test talks to the Paylane sandbox unless `PAYLANE_SANDBOX=0`; without network it waits on the socket with no timeout. Set `PAYLANE_SANDBOX=0` to use the recorded cassettes in `tests/cassettes/`, and I added `PYTEST_TIMEOUT=120` to `setup.cfg` so a hung test fails instead of blocking the run."""),
            ("b44", "Dana", """What's the connection pool size for the API? We see `too many clients` on the shared staging database sometimes."""),
            ("b45", "agent", """`DATABASE_POOL_SIZE` is 20 with `DATABASE_MAX_OVERFLOW` 10 per process, and staging runs 4 API processes and 3 workers, so up to 210 connections against a `max_connections` of 200. Lower the pool to 10 and overflow to 5 on staging (`config/staging.env`), or put PgBouncer in front; the first is a one-line change."""),
            ("b46", "Dana", """Where do the settings come from, env or a file?"""),
            ("b47", "agent", """Both: `billing/settings.py` defines a pydantic `BillingSettings` class; values come from environment variables first, then `config/<env>.env`, then the defaults in the class. `python -m billing.settings --show` prints the effective values with their source, secrets masked."""),
        )),
        Session("bill-1", "2026-02-02T09:30:00", (
            ("b01", "Dana", """The invoice sync job keeps timing out against the payments provider. Here is the config we deploy with:

```yaml
payments:
  base_url: https://api.paylane.example/v2
  RETRY_MAX_ATTEMPTS: 5
  RETRY_BACKOFF_MS: 250
  REQUEST_TIMEOUT_S: 10
  webhook_secret_env: PAYLANE_WEBHOOK_SECRET
```

Can you look at why it gives up so fast?"""),
            ("b02", "agent", """With `RETRY_BACKOFF_MS: 250` and `RETRY_MAX_ATTEMPTS: 5` the client waits 250, 500, 1000 and 2000 ms between attempts (the backoff doubles), so it gives up after about 3.75 seconds of waiting in total. The provider's status page says their incidents usually last a minute or more. I suggest raising the backoff base to 2000 ms and capping each wait at 30 s with a new `RETRY_BACKOFF_CAP_MS: 30000`; keep the attempt count at 5."""),
            ("b03", "Dana", """Makes sense. Where is the backoff computed? I can't find it in `billing/sync.py`."""),
            ("b04", "agent", """It is in `billing/http/retry.py`, function `compute_backoff_delay`:

```python
def compute_backoff_delay(attempt: int, base_ms: int, cap_ms: int | None = None) -> float:
    delay = base_ms * (2 ** (attempt - 1))
    if cap_ms is not None:
        delay = min(delay, cap_ms)
    return delay / 1000 + random.uniform(0, 0.1)
```

The jitter is only up to 100 ms, which is why the workers retry almost in lockstep. I'd switch to full jitter: `random.uniform(0, delay)`."""),
            ("b05", "Dana", """Ok, do it, and add a unit test. Also the sync job logs are noisy; this is one run:

```
2026-02-02 08:14:03 INFO  invoice_sync started batch=412 size=500
2026-02-02 08:14:13 WARN  paylane timeout attempt=1 invoice=INV-88213
2026-02-02 08:14:17 WARN  paylane timeout attempt=5 invoice=INV-88213
2026-02-02 08:14:17 ERROR invoice_sync batch=412 failed: RetryExhausted
```"""),
            ("b06", "agent", """Done: `compute_backoff_delay` now uses full jitter and honours `RETRY_BACKOFF_CAP_MS`; the test `test_backoff_is_capped_and_jittered` checks 1000 draws stay within [0, cap]. In the log, batch 412 fails as a whole on one invoice (INV-88213) because `RetryExhausted` is raised out of the batch loop. I changed `InvoiceSyncJob.run_batch` to record the failed invoice in `sync_failures` and carry on with the other 499."""),
        )),
        Session("bill-2", "2026-02-05T14:10:00", (
            ("b07", "Dana", """New problem: the customer portal shows stale names after a customer edits their profile. The loader is `UserProfileLoader` in `accounts/profile.py`, and there's a cache in front of it, `UserProfileCache`, TTL 3600."""),
            ("b08", "agent", """`UserProfileLoader.load` reads through `UserProfileCache.get_or_load`, but the profile update endpoint (`PATCH /v1/profile`) never invalidates the cache entry, so an edited name stays for up to an hour (the TTL of 3600 s). Two fixes: call `UserProfileCache.invalidate(user_id)` in `update_profile` after the commit, or lower the TTL. I'd invalidate; the TTL can stay."""),
            ("b09", "Dana", """Invalidate it. What's the cache key format? Ops asked, they want to flush by hand."""),
            ("b10", "agent", """The key is `profile:v3:{tenant_id}:{user_id}` (built by `UserProfileCache._key`). To flush one user by hand: `redis-cli DEL profile:v3:acme:u_1842`. For a whole tenant, `redis-cli --scan --pattern 'profile:v3:acme:*' | xargs redis-cli DEL`, which is safe because the loader refills on the next read."""),
            ("b11", "Dana", """Also the mobile team calls `loadUserProfile` from the TypeScript SDK and it breaks on accounts without an avatar:

```
TypeError: Cannot read properties of null (reading 'url')
    at loadUserProfile (sdk/src/profile.ts:48:31)
    at async ProfileScreen.refresh (app/screens/ProfileScreen.tsx:22:5)
```"""),
            ("b12", "agent", """`sdk/src/profile.ts` line 48 does `profile.avatar.url`, but the API returns `avatar: null` for accounts that never uploaded one. I changed it to `profile.avatar?.url ?? DEFAULT_AVATAR_URL` and added the case to `profile.test.ts`. The SDK version needs a patch bump, 4.2.1 -> 4.2.2."""),
        )),
        Session("bill-3", "2026-02-11T10:00:00", (
            ("b13", "Dana", """Deploys to staging fail since this morning. Pipeline output:

```
Step 6/9 : RUN pip install -r requirements.lock
ERROR: Could not find a version that satisfies the requirement pydantic-core==2.41.7
ERROR: No matching distribution found for pydantic-core==2.41.7
```"""),
            ("b14", "agent", """`pydantic-core==2.41.7` was yanked from the index yesterday. `requirements.lock` pins it because `pydantic==2.12.2` asked for it. Bump to `pydantic==2.12.3`, which depends on `pydantic-core==2.41.8`, then regenerate the lock with `uv pip compile requirements.in -o requirements.lock`. I checked that nothing else in the lock changes."""),
            ("b15", "Dana", """Done, staging is green. Next: finance wants the tax rounding fixed. Invoice INV-90001 shows total 107.09 but their spreadsheet says 107.10."""),
            ("b16", "agent", """`TaxCalculator.line_tax` rounds each line with Python's `round()`, which is banker's rounding (half to even), then sums the lines. Finance rounds the invoice total once, half up. For INV-90001 the three lines each had tax ending in .005 and two rounded down. Fix: compute each line's tax as a `Decimal`, sum, then quantize once with `ROUND_HALF_UP` in `TaxCalculator.invoice_tax`. The setting `TAX_ROUNDING_MODE` already exists in `billing/settings.py` but nothing reads it; I wired it in with default `half_up`."""),
            ("b17", "Dana", """Good. While you're there, what's `GRACE_PERIOD_DAYS` set to? A customer says they were suspended too early."""),
            ("b18", "agent", """`GRACE_PERIOD_DAYS` is 14 in `billing/settings.py`, but `SuspensionPolicy.should_suspend` compares `days_overdue > GRACE_PERIOD_DAYS - 1`, so accounts are suspended on day 14 instead of after it. That's an off-by-one; the customer was suspended a day early. Changed to `days_overdue > GRACE_PERIOD_DAYS` with a test for day 14 and day 15."""),
        )),
        Session("bill-4", "2026-02-18T16:45:00", (
            ("b19", "Dana", """Webhooks from Paylane started failing signature checks after we rotated the secret. Log:

```
2026-02-18 16:02:55 WARN webhook rejected: SignatureMismatch event=evt_7Qk2 expected=sha256=9f1c... got=sha256=41be...
```"""),
            ("b20", "agent", """`verify_webhook_signature` reads the secret once at import time from `PAYLANE_WEBHOOK_SECRET`, so the workers still hold the old one until restarted. Paylane signs with the new secret as soon as it is rotated. Short term: restart the `webhook-worker` deployment. Long term I made `WebhookVerifier` accept a list of secrets (`PAYLANE_WEBHOOK_SECRETS`, comma separated) so the old and new can overlap during rotation."""),
            ("b21", "Dana", """Restarted, errors gone. Can you write the rotation steps into the runbook?"""),
            ("b22", "agent", """Added to `docs/runbooks/paylane.md`, section 'Rotating the webhook secret': 1) add the new secret to `PAYLANE_WEBHOOK_SECRETS` after the old one, 2) roll the `webhook-worker` deployment, 3) rotate in the Paylane dashboard, 4) after 24 hours remove the old secret and roll again."""),
            ("b23", "Dana", """Unrelated: the nightly `ledger_reconcile` task crashed.

```
Traceback (most recent call last):
  File "/app/billing/ledger/reconcile.py", line 133, in reconcile_day
    entry = ledger_index[payment.external_ref]
KeyError: 'pl_ch_3Mx9'
```"""),
            ("b24", "agent", """`reconcile_day` assumes every Paylane charge has a ledger entry, but `pl_ch_3Mx9` is a charge created by a refund reversal, which the ledger records under the refund's reference. I added a lookup through `payment.reversal_of` before giving up, and the task now logs unmatched charges to the `reconcile_unmatched` table instead of raising."""),
        )),
        Session("bill-5", "2026-02-25T11:20:00", (
            ("b25", "Dana", """Performance: the invoice list endpoint `GET /v1/invoices` takes 2.8 s for big tenants. Here is the slow query from the log:

```sql
SELECT * FROM invoices WHERE tenant_id = $1 AND status <> 'void' ORDER BY issued_at DESC LIMIT 50 OFFSET 5000;
```"""),
            ("b26", "agent", """Two problems: there's no index on `(tenant_id, issued_at)`, so Postgres sorts every row of the tenant, and `OFFSET 5000` still reads and drops 5000 rows. I added migration `0042_invoices_tenant_issued_idx` creating `CREATE INDEX CONCURRENTLY invoices_tenant_issued_idx ON invoices (tenant_id, issued_at DESC)` and switched the endpoint to keyset pagination with a `before` cursor (the last `issued_at` and `id`). Local test on a copy of the biggest tenant: 2.8 s -> 18 ms."""),
            ("b27", "Dana", """Nice. Is `MAX_PAGE_SIZE` still 200? Some client asked for 1000 rows per page."""),
            ("b28", "agent", """`MAX_PAGE_SIZE` is 200 in `api/pagination.py`; requests above it are clamped, not rejected. With keyset pagination a bigger page is cheap, but the response for 1000 invoices is about 1.9 MB. I'd keep 200 and tell the client to follow the cursor."""),
            ("b29", "Dana", """Agreed. Last thing today: the feature flag for the new dunning emails, what's it called and who has it on?"""),
            ("b30", "agent", """The flag is `billing.dunning_v2_enabled` in `flags.yaml`. It is on for the tenants `acme` and `northwind`, off by default. The emails themselves are rendered by `DunningEmailRenderer` from the templates in `templates/dunning/`."""),
        )),
        Session("bill-6", "2026-03-04T09:05:00", (
            ("b31", "Dana", """The dunning emails went out twice to northwind customers last night. Worker log:

```
03:00:01 INFO dunning_run started tenant=northwind
03:00:01 INFO dunning_run started tenant=northwind
03:00:44 INFO sent 212 dunning emails tenant=northwind
03:00:46 INFO sent 212 dunning emails tenant=northwind
```"""),
            ("b32", "agent", """Two `dunning_run` jobs started in the same second: the scheduler runs on both replicas of `billing-scheduler` since the scale-up to 2 last week, and the job has no lock. I added a Postgres advisory lock (`pg_try_advisory_lock(hashtext('dunning_run:' || tenant))`) at the start of `DunningRun.execute`; the second replica now logs `dunning_run skipped: locked` and exits. I also added an idempotency key per invoice and day to `dunning_sends` so a send can't repeat."""),
            ("b33", "Dana", """How many customers got two emails and what do we tell them?"""),
            ("b34", "agent", """212 customers of northwind got the email twice (the `dunning_sends` rows from 03:00). Nothing was charged twice: dunning only sends reminders. I drafted a short apology for support in `docs/incidents/2026-03-04-dunning-duplicates.md`."""),
            ("b35", "Dana", """What's our default `SESSION_IDLE_TIMEOUT_MIN` for the portal? Security review asks."""),
            ("b36", "agent", """`SESSION_IDLE_TIMEOUT_MIN` is 30 in `portal/settings.py`, and `SESSION_ABSOLUTE_TIMEOUT_H` is 12. The review's checklist asks for at most 15 minutes idle for admin users; there's no separate setting for admins yet. I'd add `ADMIN_SESSION_IDLE_TIMEOUT_MIN = 15`."""),
        )),
        Session("bill-7", "2026-03-10T15:30:00", (
            ("b50", "Dana", """The transactional email provider is flaky too. Mailer config:

```yaml
mailer:
  provider: postmark
  MAILER_RETRY_MAX_ATTEMPTS: 3
  MAILER_BACKOFF_S: 5
  from_address: billing@shopwave.example
```

Should we copy the payments retry settings?"""),
            ("b51", "agent", """Not as they are. Emails are sent from a queue, so a failed send can wait much longer than an API call: keep `MAILER_RETRY_MAX_ATTEMPTS` at 3 but let the queue redeliver with a delay of 5, 30 and 300 seconds (`MAILER_REDELIVERY_DELAYS_S: [5, 30, 300]`). The in-process `MAILER_BACKOFF_S` then only covers connection resets."""),
            ("b52", "Dana", """Legal asks for a GDPR export of a customer's profile data. Do we have anything?"""),
            ("b53", "agent", """There's `UserProfileExporter` in `accounts/export.py`, written for the account deletion flow: it collects the profile, addresses, payment method metadata (never card numbers) and invoices into a zip of JSON files. It isn't exposed anywhere. I added an admin command: `python -m accounts.export --user u_1842 --out export.zip`, which reads through the exporter and logs who ran it."""),
            ("b54", "Dana", """Invoice PDFs for Japanese customers show empty boxes instead of characters:

```
WARNING fontTools.subset: glyph not found: uni6771
INFO InvoicePdfRenderer rendered invoice=INV-91234 pages=1 font=Inter
```"""),
            ("b55", "agent", """`InvoicePdfRenderer` embeds only the Inter font, which has no CJK glyphs. I added Noto Sans JP as a fallback font in `templates/pdf/fonts.css` and made the renderer pick fonts per script, so Latin text keeps Inter. PDF size grows by about 300 KB for invoices with Japanese text because of the subset."""),
            ("b56", "Dana", """What's the quarterly VAT report built from? Finance says Q4 numbers look low."""),
            ("b57", "agent", """`TaxReportBuilder.quarter` sums `invoice_tax` over invoices issued in the quarter, but it filters on `status = 'paid'`, so invoices issued in December and paid in January are missing from Q4. VAT is due on issue, not payment; I changed the filter to exclude only `void` invoices. Q4 goes up by 41,220 EUR."""),
            ("b58", "Dana", """And the CSV export of invoices, why does it time out for acme?"""),
            ("b59", "agent", """The CSV export loads every invoice into memory before writing. I made it stream in batches of `EXPORT_BATCH_SIZE` (1000) with a server-side cursor; acme's 380,000 invoices now export in 40 s with flat memory."""),
        )),
    ),
    (
        Question("What is the retry backoff setting for the payments provider?", ("b01",)),
        Question("How many attempts does the payments client make before giving up?", ("b01", "b02")),
        Question("What request timeout is configured for the payments client?", ("b01",)),
        Question("How long does the payments client wait in total before it gives up?", ("b02",)),
        Question("What value did the agent suggest for the retry backoff cap?", ("b02",)),
        Question("Where is the backoff delay computed?", ("b04",)),
        Question("How much jitter did the compute backoff delay function add?", ("b04",)),
        Question("What kind of jitter did the agent switch the backoff to?", ("b04", "b06")),
        Question("Which invoice made batch 412 fail?", ("b05", "b06")),
        Question("What does the invoice sync job do now when an invoice exhausts its retries?", ("b06",)),
        Question("What test checks the backoff cap and jitter?", ("b06",)),
        Question("Where does the user profile loader live?", ("b07",)),
        Question("What is the time to live of the user profile cache?", ("b07", "b08")),
        Question("Why did the customer portal show stale names after a profile edit?", ("b08",)),
        Question("What is the cache key format of the profile cache?", ("b10",)),
        Question("How can ops flush the profile cache for a whole tenant?", ("b10",)),
        Question("Why does load user profile crash in the TypeScript SDK?", ("b11", "b12")),
        Question("Which screen called the SDK's profile loading when it crashed?", ("b11",)),
        Question("What is the fallback when a profile has no avatar?", ("b12",)),
        Question("What SDK version has the avatar fix?", ("b12",)),
        Question("Why did deploys to staging fail on February 11?", ("b13", "b14")),
        Question("Which pydantic version fixed the staging build?", ("b14",)),
        Question("How is the requirements lock file regenerated?", ("b14",)),
        Question("Why was invoice INV-90001 off by one cent?", ("b15", "b16")),
        Question("What does the tax rounding mode setting default to?", ("b16",)),
        Question("Which method of the tax calculator rounds the invoice total?", ("b16",)),
        Question("What is the grace period in days before suspension?", ("b18",)),
        Question("What was wrong with the suspension policy's should suspend check?", ("b18",)),
        Question("Why did webhook signature checks fail after the secret rotation?", ("b19", "b20")),
        Question("What environment variable holds several webhook secrets during rotation?", ("b20",)),
        Question("What are the steps to rotate the Paylane webhook secret?", ("b22",)),
        Question("Where are the webhook secret rotation steps documented?", ("b22",)),
        Question("Why did the nightly ledger reconcile task crash?", ("b23", "b24")),
        Question("Where are unmatched charges recorded by the reconcile task?", ("b24",)),
        Question("Which query made the invoice list endpoint slow?", ("b25",)),
        Question("What index was added for the invoice list and in which migration?", ("b26",)),
        Question("How fast is the invoice list after the pagination change?", ("b26",)),
        Question("What is the maximum page size of the API?", ("b27", "b28")),
        Question("How big is a response with 1000 invoices?", ("b28",)),
        Question("What is the feature flag for the new dunning emails called?", ("b30",)),
        Question("Which tenants have the dunning v2 flag on?", ("b30",)),
        Question("Which class renders the dunning emails?", ("b30",)),
        Question("Why were the dunning emails sent twice to northwind?", ("b31", "b32")),
        Question("How does the dunning run avoid running twice now?", ("b32",)),
        Question("How many northwind customers received duplicate dunning emails?", ("b34",)),
        Question("Where is the apology draft for the duplicate dunning emails?", ("b34",)),
        Question("What is the portal's session idle timeout?", ("b36",)),
        Question("What is the absolute session timeout of the portal?", ("b36",)),
        Question("What idle timeout did the agent propose for admin sessions?", ("b36",)),
        Question("What does the webhook verifier accept now instead of a single secret?", ("b20",)),
        Question("Which deployment must be restarted after the webhook secret is rotated?", ("b20", "b22")),
        Question("Which charge was missing from the ledger index?", ("b23", "b24")),
        Question("Which table records the invoices that failed to sync?", ("b06",)),
        Question("What must the update profile function call after the commit?", ("b08",)),
        Question("Which method of the invoice sync job now carries on after a failed invoice?", ("b06",)),
        Question("How does the dunning run take its lock?", ("b32",)),
        Question("How many times does the mailer retry a send?", ("b50", "b51")),
        Question("What does the user profile exporter collect?", ("b53",)),
        Question("Why did invoice PDFs for Japanese customers show empty boxes?", ("b54", "b55")),
        Question("Why were the Q4 VAT report numbers low?", ("b56", "b57")),
        Question("What is the database pool size of the billing API?", ("b45",)),
    ),
    ROLES,
)


SEARCH = Conversation(
    "search-service",
    ("Ravi", "assistant"),
    (
        Session("srch-0", "2026-03-30T09:00:00", (
            ("x40", "Ravi", """I'm taking over the search cluster from Leah. Can you explain this part of `elasticsearch.yml`?

```yaml
cluster.name: shopwave-search
node.roles: [data, ingest]
thread_pool.write.queue_size: 200
indices.memory.index_buffer_size: 20%
indices.queries.cache.size: 10%
```"""),
            ("x41", "assistant", """`thread_pool.write.queue_size: 200` is how many bulk or index requests a node queues before rejecting new ones with a 429; `indices.memory.index_buffer_size: 20%` is the share of the heap used to buffer new documents before they're written as a segment (the default is 10%, raised for the nightly bulk loads); `indices.queries.cache.size: 10%` caches filter results. The nodes are data and ingest only; the three master nodes are a separate node group."""),
            ("x42", "Ravi", """How do I check the cluster is healthy? Leah used some CLI."""),
            ("x43", "assistant", """That's `search-admin`, in `tools/search-admin`: `search-admin health` prints the cluster status, unassigned shards and the heap use per node; `search-admin indices` lists indices with doc counts and sizes. The API's own `/health` endpoint is served by `SearchHealthChecker` and only checks that the cluster answers, not that the index is complete."""),
            ("x44", "Ravi", """Where does the catalogue data come from?"""),
            ("x45", "assistant", """The pricing and catalogue teams write a daily export to `s3://shopwave-catalogue/export-YYYY-MM-DD/` as gzipped JSON lines; `CatalogExportReader` streams it and `BulkIndexJob` indexes it. An incremental feed of changes (`catalogue-changes` Kafka topic) updates prices and stock every few seconds between the daily loads."""),
            ("x46", "Ravi", """Is there a dashboard for query latency?"""),
            ("x47", "assistant", """Grafana, dashboard 'Search / API': p50, p95 and p99 of `search_request_duration_seconds` by endpoint, and zero-result rate from `search_zero_results_total`. The p95 target in the SLO is 150 ms for `/search` and 50 ms for `/suggest`."""),
        )),
        Session("srch-1", "2026-04-06T10:15:00", (
            ("x01", "Ravi", """Our product search pod keeps getting OOMKilled. Deployment snippet:

```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: product-search-api
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: api
          image: registry.internal/product-search-api:1.18.4
          resources:
            requests: {memory: 512Mi, cpu: 250m}
            limits: {memory: 1Gi, cpu: "1"}
          env:
            - {name: JAVA_OPTS, value: "-Xmx900m"}
            - {name: SEARCH_INDEX_REFRESH_INTERVAL, value: "5s"}
```"""),
            ("x02", "assistant", """`-Xmx900m` gives the heap 900 MiB inside a 1 GiB limit, which leaves about 124 MiB for metaspace, thread stacks, direct buffers and the JIT, and the Lucene mmap'd segments count toward the container too. That's why the kernel kills it rather than the JVM throwing OutOfMemoryError. Set the heap as a share of the container: `-XX:MaxRAMPercentage=60` instead of `-Xmx`, and raise the memory limit to 2Gi; requests can go to 1Gi."""),
            ("x03", "Ravi", """Changed. Also the index refresh interval of 5s seems aggressive, the indexer writes in bulk every 10 minutes anyway."""),
            ("x04", "assistant", """Agreed: with bulk writes every 10 minutes, a 5 s `SEARCH_INDEX_REFRESH_INTERVAL` only creates tiny segments that must be merged later. Set it to `60s`, and have the indexer call an explicit refresh at the end of each bulk load (`IndexWriterService.refreshAfterBulk()`), so new products appear right after the load, not up to a minute later."""),
            ("x05", "Ravi", """Ok. How do I see the merge pressure? Is there a metric?"""),
            ("x06", "assistant", """Yes: `search_index_segment_count` and `search_index_merge_time_seconds_total` are exported on `/metrics` by `IndexMetricsCollector`. A healthy index sits at 20-40 segments; yours showed 310 before the change."""),
        )),
        Session("srch-2", "2026-04-09T15:40:00", (
            ("x07", "Ravi", """Search results for 'iphone case' come back empty since the synonyms deploy. The analyzer config:

```json
{
  "analyzer": {
    "product_text": {
      "tokenizer": "standard",
      "filter": ["lowercase", "product_synonyms", "english_stemmer"]
    }
  },
  "filter": {
    "product_synonyms": {"type": "synonym_graph", "synonyms_path": "analysis/synonyms.txt"}
  }
}
```"""),
            ("x08", "assistant", """The line `iphone, i phone => apple phone` in `analysis/synonyms.txt` rewrites 'iphone' to 'apple phone' at query time only, while documents indexed before the deploy still hold 'iphone'. A `synonym_graph` filter belongs in the search analyzer, not the index analyzer, and the rule should be an equivalence, not a replacement: `iphone, i phone, apple phone`. I split the config into `product_text_index` (no synonyms) and `product_text_search` (with `product_synonyms`)."""),
            ("x09", "Ravi", """Fixed, thanks. Next: the autocomplete endpoint is slow on cold start. It's `SuggestController.suggest` calling `PrefixSuggester.lookup`."""),
            ("x10", "assistant", """`PrefixSuggester` builds its FST from the whole catalogue on the first request (`buildIfAbsent()`), 4.5 seconds for 2.1 million titles, so the first user after a deploy waits. Build it at startup in the readiness probe instead: `/ready` returns 503 until `PrefixSuggester.isBuilt()`, so Kubernetes doesn't route traffic to the pod before then."""),
            ("x11", "Ravi", """What's the readiness probe config then? We have `initialDelaySeconds: 5`."""),
            ("x12", "assistant", """Use `readinessProbe: {httpGet: {path: /ready, port: 8080}, initialDelaySeconds: 10, periodSeconds: 5, failureThreshold: 24}` so a pod has up to 2 minutes to build the suggester, and keep the `livenessProbe` on `/health` with a larger delay (60 s) so a slow build doesn't get the pod restarted."""),
        )),
        Session("srch-3", "2026-04-15T09:50:00", (
            ("x13", "Ravi", """Got paged at 3am. Crash loop in the indexer:

```
Exception in thread "main" java.lang.IllegalStateException: Mapping conflict for field [price.amount]: existing [long], new [double]
    at com.shopwave.indexer.mapping.MappingGuard.check(MappingGuard.java:77)
    at com.shopwave.indexer.BulkIndexJob.prepare(BulkIndexJob.java:41)
    at com.shopwave.indexer.Main.main(Main.java:19)
```"""),
            ("x14", "assistant", """The catalogue export started sending `price.amount` as a decimal (19.99) instead of integer cents (1999) after the pricing team's release 7.3. The index mapping has `price.amount` as `long`, and `MappingGuard.check` refuses to change a field type in place. Short term: ask pricing to restore cents (their flag `export.price_in_cents`). Long term: a new index `products_v5` with `price.amount_cents` (long), reindexed from the export, then switch the alias `products` to it."""),
            ("x15", "Ravi", """Pricing flipped `export.price_in_cents` back. Indexer is healthy. Let's plan the v5 reindex for next week."""),
            ("x16", "assistant", """Plan for `products_v5`: 1) create the index with the new mapping, 2) run `BulkIndexJob --target products_v5 --source export-2026-04-20`, about 40 minutes for 2.1 M documents, 3) compare doc counts and a sample of 500 queries against `products_v4`, 4) swap the alias `products` atomically, 5) keep v4 for 7 days, then delete it."""),
            ("x17", "Ravi", """Separate thing: the `search-gateway` has a rate limiter, right? Partners say they get 429s at 50 req/s."""),
            ("x18", "assistant", """Yes, `search-gateway` uses a token bucket per API key: `RATE_LIMIT_RPS=40` with `RATE_LIMIT_BURST=80` in `gateway/config/limits.env`. At a steady 50 req/s the bucket drains in 8 seconds, then every request above 40 per second gets 429. For partners, the per-key override goes in `partner_limits.yaml`, e.g. `acme-partner: {rps: 100, burst: 200}`."""),
        )),
        Session("srch-4", "2026-04-22T13:30:00", (
            ("x19", "Ravi", """Reindex to v5 is running. Progress log:

```
13:02:11 BulkIndexJob target=products_v5 docs=500000/2104332 rate=11.9k/s
13:14:40 BulkIndexJob target=products_v5 docs=1400000/2104332 rate=1.2k/s
13:14:41 WARN es_rejected_execution_exception: rejected execution of coordinating operation [queue capacity = 200]
```

It slowed down massively."""),
            ("x20", "assistant", """The bulk requests are rejected because the write thread pool's queue (capacity 200) is full, and the job retries each rejected batch immediately, which makes it worse. Lower `BULK_CONCURRENCY` from 16 to 6 and `BULK_BATCH_SIZE` from 5000 to 2000 in `indexer/application.properties`, and set `index.refresh_interval: -1` and `number_of_replicas: 0` on `products_v5` during the load (restore 60s and 1 after)."""),
            ("x21", "Ravi", """Done, it finished at 13:58. Doc counts match. Sample query comparison: 497 of 500 identical top-10."""),
            ("x22", "assistant", """The 3 that differ are queries with prices (`under 20 dollars`): v5 parses the price filter against `price.amount_cents`, so `PriceFilterParser.parse` needs to multiply by 100. I fixed it in `search-api` 1.19.0; after deploying it all 500 match. Safe to swap the alias."""),
            ("x23", "Ravi", """Alias swapped. What was the command again for later?"""),
            ("x24", "assistant", """`POST /_aliases` with `{"actions": [{"remove": {"index": "products_v4", "alias": "products"}}, {"add": {"index": "products_v5", "alias": "products"}}]}`; both actions apply atomically, so no request sees no index. The script is `ops/swap_alias.sh products products_v4 products_v5`."""),
        )),
        Session("srch-5", "2026-04-29T11:00:00", (
            ("x25", "Ravi", """The mobile app team reports the search screen sometimes shows results for the previous query. Kotlin code:

```kotlin
class SearchViewModel(private val repo: SearchRepository) : ViewModel() {
    fun onQueryChanged(query: String) {
        viewModelScope.launch {
            val results = repo.searchProducts(query)
            _state.value = SearchState.Results(results)
        }
    }
}
```"""),
            ("x26", "assistant", """Each keystroke launches a coroutine, and a slow response to an older query can arrive after the newer one and overwrite it. Keep the job and cancel it: `searchJob?.cancel(); searchJob = viewModelScope.launch { delay(250); ... }`, which also debounces by 250 ms. Or make `onQueryChanged` push into a `MutableStateFlow` and use `debounce(250).flatMapLatest { repo.searchProducts(it) }`, which cancels stale requests by construction."""),
            ("x27", "Ravi", """We'll go with flatMapLatest. Another one: the search_product_clicks table grows 30 GB a month. Do we need all of it?"""),
            ("x28", "assistant", """`search_product_clicks` is only read by the ranking model's nightly training (`ClickModelTrainer`), which uses the last 90 days. Partition the table by month (`PARTITION BY RANGE (clicked_at)`) and drop partitions older than 6 months with the `pg_partman` retention setting `retention = '6 months'`. That caps it near 180 GB instead of growing forever."""),
            ("x29", "Ravi", """What does `ClickModelTrainer` actually produce?"""),
            ("x30", "assistant", """It fits a position-debiased click model and writes per-product boosts to `ranking/boosts/YYYY-MM-DD.parquet`; `search-api` loads the newest file at startup through `BoostTableLoader` and multiplies the BM25 score by `1 + 0.3 * boost`. The 0.3 is `RANKING_BOOST_WEIGHT`."""),
        )),
        Session("srch-6", "2026-05-06T16:20:00", (
            ("x31", "Ravi", """search-api 1.19.2 fails on startup in one region:

```
ERROR BoostTableLoader - failed to load boosts
java.io.FileNotFoundException: s3://shopwave-ranking/boosts/2026-05-06.parquet (No such file)
    at com.shopwave.search.ranking.BoostTableLoader.loadLatest(BoostTableLoader.java:58)
```"""),
            ("x32", "assistant", """`BoostTableLoader.loadLatest` builds today's file name instead of listing the folder, and the eu-west bucket replica lags the training job by about 2 hours, so today's file doesn't exist there yet. I changed it to list `boosts/` and take the newest object, and to start with no boosts (a warning, not a failure) if the folder is empty."""),
            ("x33", "Ravi", """Good. Last: can you summarise the search service's config values we changed this month, for the changelog?"""),
            ("x34", "assistant", """This month: memory limit 1Gi -> 2Gi with `-XX:MaxRAMPercentage=60`; `SEARCH_INDEX_REFRESH_INTERVAL` 5s -> 60s; readiness probe on `/ready` with `failureThreshold: 24`; `BULK_CONCURRENCY` 16 -> 6 and `BULK_BATCH_SIZE` 5000 -> 2000; index `products_v5` behind the alias `products`; `search_product_clicks` partitioned monthly with 6 months' retention."""),
            ("x35", "Ravi", """And the gateway's `RATE_LIMIT_RPS`, did we change that?"""),
            ("x36", "assistant", """No, `RATE_LIMIT_RPS` is still 40 and `RATE_LIMIT_BURST` 80; only `acme-partner` got an override (100 rps, burst 200) in `partner_limits.yaml`."""),
        )),
        Session("srch-7", "2026-05-12T10:30:00", (
            ("x50", "Ravi", """New service joined our team: recommendations. Its config:

```
RECS_MODEL_PATH=s3://shopwave-ranking/recs/model-2026-05.onnx
RECS_CACHE_TTL_S=900
RATE_LIMIT_RPS=20
RATE_LIMIT_BURST=20
```

Anything odd?"""),
            ("x51", "assistant", """`RATE_LIMIT_RPS=20` with a burst of 20 is tight for a service the product page calls on every view: at peak the product pages get about 60 views a second. Its limiter is separate from the search gateway's. I'd raise the recommendations limit to 80 with burst 160, and keep `RECS_CACHE_TTL_S=900` (15 minutes) since recommendations change daily."""),
            ("x52", "Ravi", """The recs service loads its model slowly too:

```
INFO RecommendationModelLoader loading s3://shopwave-ranking/recs/model-2026-05.onnx (412 MB)
INFO RecommendationModelLoader loaded in 71.4 s
```"""),
            ("x53", "assistant", """71 seconds is the download from S3 at about 6 MB/s. Bake the model into the image at build time, or cache it on a shared volume: `RecommendationModelLoader` can read from `/models` first if `RECS_MODEL_CACHE_DIR` is set. With a local file the load takes about 4 seconds."""),
            ("x54", "Ravi", """The Android product detail page leaks memory according to LeakCanary:

```
ProductDetailViewModel instance leaked
  References: ProductDetailFragment.imageLoaderCallback -> ProductDetailViewModel
```"""),
            ("x55", "assistant", """`ProductDetailFragment` registers `imageLoaderCallback` with the global image loader and never unregisters it, so the callback keeps the view model alive after the screen closes. Unregister it in `onDestroyView`, or use the loader's lifecycle-aware `load(..., lifecycleOwner = viewLifecycleOwner)`, which drops the callback by itself."""),
            ("x56", "Ravi", """Search history on the app: where is it stored?"""),
            ("x57", "assistant", """`SearchHistoryRepository` keeps the last 20 queries in a Room table `search_history` on the device; nothing goes to the server. Clearing it from settings calls `SearchHistoryRepository.clear()`."""),
        )),
    ),
    (
        Question("What memory limit did the product search API deployment have when it was OOM killed?", ("x01",)),
        Question("What Java heap setting did the product search pod use?", ("x01",)),
        Question("Why was the product search pod killed by the kernel rather than throwing an out of memory error?", ("x02",)),
        Question("What should replace the Xmx heap option?", ("x02",)),
        Question("What image version was the product search API running?", ("x01",)),
        Question("What value was the search index refresh interval changed to?", ("x04",)),
        Question("Which method refreshes the index after a bulk load?", ("x04",)),
        Question("Which metrics show index merge pressure?", ("x06",)),
        Question("How many segments did the index have before the refresh change?", ("x06",)),
        Question("Why did searches for iphone case return nothing after the synonyms deploy?", ("x07", "x08")),
        Question("Where is the synonyms file?", ("x07",)),
        Question("How was the product text analyzer split?", ("x08",)),
        Question("Why is the autocomplete slow on cold start?", ("x09", "x10")),
        Question("How long does the prefix suggester take to build?", ("x10",)),
        Question("What readiness probe settings were recommended?", ("x12",)),
        Question("What delay should the liveness probe have?", ("x12",)),
        Question("What caused the indexer crash loop at 3am?", ("x13", "x14")),
        Question("Which class refuses the mapping change for the price amount field?", ("x13", "x14")),
        Question("Which pricing flag restores prices in cents?", ("x14", "x15")),
        Question("What field holds the price in the v5 products index?", ("x14",)),
        Question("What are the steps of the products v5 reindex plan?", ("x16",)),
        Question("How long is the old v4 index kept after the swap?", ("x16",)),
        Question("What is the gateway's rate limit per second and its burst?", ("x18", "x36")),
        Question("Where are partner rate limit overrides configured?", ("x18",)),
        Question("Which file holds the search gateway limits?", ("x18",)),
        Question("Why did the v5 reindex slow down?", ("x19", "x20")),
        Question("What was the bulk concurrency changed to?", ("x20",)),
        Question("What bulk batch size did the assistant recommend?", ("x20",)),
        Question("When did the v5 reindex finish?", ("x21",)),
        Question("How many of the 500 sample queries matched between v4 and v5?", ("x21",)),
        Question("What was wrong with the price filter parser on v5?", ("x22",)),
        Question("Which search API version fixed the price filter?", ("x22",)),
        Question("How is the products alias swapped?", ("x24",)),
        Question("What does the swap alias script take as arguments?", ("x24",)),
        Question("Why does the mobile search screen show results of the previous query?", ("x25", "x26")),
        Question("What debounce did the assistant suggest for the search view model?", ("x26",)),
        Question("How fast does the search product clicks table grow?", ("x27",)),
        Question("How long is click data kept after partitioning?", ("x28",)),
        Question("How many days of clicks does the click model trainer use?", ("x28",)),
        Question("Where does the click model trainer write the boosts?", ("x30",)),
        Question("What is the ranking boost weight?", ("x30",)),
        Question("Which class loads the boost table at startup?", ("x30", "x31")),
        Question("Why did search API 1.19.2 fail on startup in one region?", ("x31", "x32")),
        Question("How far does the eu-west bucket replica lag behind the training job?", ("x32",)),
        Question("Which config values of the search service changed this month?", ("x34",)),
        Question("What is the CPU limit of the product search API container?", ("x01",)),
        Question("Which endpoint does the readiness probe call?", ("x10", "x12")),
        Question("What were the refresh interval and replica count set to during the bulk load?", ("x20",)),
        Question("How should the search product clicks table be partitioned?", ("x28",)),
        Question("How many titles does the prefix suggester index?", ("x10",)),
        Question("What does the write thread pool queue size of the search cluster mean?", ("x41",)),
        Question("What rate limit does the recommendations service have?", ("x50", "x51")),
        Question("Why does the product detail view model leak memory?", ("x54", "x55")),
        Question("How many queries does the search history repository keep?", ("x57",)),
    ),
    ROLES,
)

#: The conversations of the set, each asked in its own namespace.
CONVERSATIONS = (BILLING, SEARCH)
