"""Labelled write pairs for the write-time decisions (issue 31, item 1).

Each :class:`WritePair` is an ``old`` statement, stored first, and a ``new`` one
written after it into the same (fresh) namespace; ``expected`` is the status the
second write must get with the default policy and the default local embedder:

- ``additive`` -> ``added``: the second is one more true fact beside the first (a
  relation that holds many values at once, "also / too / as well / another / in
  addition", a dated past occurrence, another attribute of the same subject);
- ``distinct`` -> ``added``: close wording, another meaning (a qualifier or a
  content word differs: "older" / "younger", "front" / "back");
- ``negation`` -> ``superseded``: the second negates the first or states that it
  stopped ("no longer", "quit", "moved away from", "cancelled", "switched off");
- ``update`` -> ``superseded``: a single-valued attribute gets a new value (also
  with the value first, a pronoun subject, or no verb at all: "Upload limit: 25 MB.");
- ``duplicate`` -> ``refused``: the same statement (contractions, clause order,
  leading discourse fillers, case and punctuation);
- ``record`` -> ``added``: a logged turn (``type="episodic"``,
  ``on_duplicate="keep"``, or a role in metadata) is never refused nor
  superseding, whatever it says.

The sentences were written for this set, across personal life, team and
infrastructure, health, travel, schedules and money; none is taken from the issue
or from a benchmark. ``options`` are extra write arguments: ``old_options`` for
the first write, ``new_options`` for the second.
"""

# ruff: noqa: E501
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ADDED, SUPERSEDED, REFUSED = "added", "superseded", "refused"

EXPECTED = {
    "additive": ADDED,
    "distinct": ADDED,
    "negation": SUPERSEDED,
    "update": SUPERSEDED,
    "duplicate": REFUSED,
    "record": ADDED,
}
CATEGORIES = tuple(EXPECTED)


@dataclass(frozen=True)
class WritePair:
    old: str
    new: str
    category: str
    domain: str
    old_options: dict[str, Any] = field(default_factory=dict)
    new_options: dict[str, Any] = field(default_factory=dict)

    @property
    def expected(self) -> str:
        return EXPECTED[self.category]


_RAW: dict[str, dict[str, list[tuple[str, str]]]] = {
    "additive": {
        "personal": [
            ("Marta speaks Portuguese.", "Marta speaks Japanese."),
            ("Tom plays the violin.", "Tom also plays the cello."),
            ("I like sourdough bread.", "I like rye bread too."),
            ("My brother collects stamps.", "My brother collects old coins as well."),
            ("We own a cabin in Norway.", "We also own a flat in Madrid."),
            ("Jonah's favourite film is Heat.", "Jonah's favourite band is Blur."),
            ("Priya's birthday is on 4 June.", "Priya's wedding anniversary is on 19 September."),
            ("Leo grows tomatoes in the garden.", "Leo grows basil in the garden."),
            ("I have a cat called Pixel.", "I have another cat called Miso."),
            ("Nadia studies chemistry.", "In addition, Nadia studies economics."),
            ("Karl reads mystery novels.", "Karl reads poetry as well."),
            ("We watched Dune on 3 February.", "We watched Arrival on 17 February."),
            ("Grandma knits scarves for the family.", "Grandma knits socks for the family too."),
            ("Felix's favourite sport is tennis.", "Felix's favourite food is ramen."),
        ],
        "team": [
            ("The team uses Kafka for event streaming.", "The team uses Kafka for audit logs."),
            ("Our service integrates with Stripe.", "Our service integrates with PayPal."),
            ("The importer accepts CSV files.", "The importer accepts Parquet files."),
            ("We deploy to AWS.", "We also deploy to Hetzner."),
            ("The API supports OAuth.", "The API supports API keys too."),
            ("The billing job failed on 2 April.", "The billing job failed on 11 April."),
            ("The platform team works with the data team.",
             "The platform team works with the security team."),
            ("We have an office in Dublin.", "We have another office in Warsaw."),
            ("Our customers include Lufthansa.", "Our customers include Siemens."),
            ("The dashboard shows request latency.", "The dashboard shows error rates as well."),
            ("The staging cluster's region is us-east-1.", "The staging cluster's owner is Dana."),
            ("The outage happened on 14 January.", "Another outage happened on 2 March."),
            ("We monitor the queue depth.", "We also monitor disk usage."),
            ("The gateway's timeout is 30 seconds.", "The gateway's retry limit is 5."),
            ("The router supports WPA2.", "The router supports WPA3."),
        ],
        "health": [
            ("I take vitamin D every morning.", "I also take magnesium every morning."),
            ("Ana is allergic to penicillin.", "Ana is allergic to latex too."),
            ("I had a blood test on 12 January.", "I had a blood test on 20 August."),
            ("My physiotherapist is Dr. Berg.", "My dentist is Dr. Okafor."),
            ("Dad sees a cardiologist.", "Dad sees a dermatologist as well."),
            ("I went to the physio on 3 May.", "I went to the physio on 24 May."),
            ("The clinic treats sports injuries.", "The clinic treats back pain as well."),
            ("Sara's blood type is O positive.", "Sara's resting heart rate is 58."),
        ],
        "travel": [
            ("We visited Lisbon in 2019.", "We visited Krakow in 2022."),
            ("Olga has been to Iceland.", "Olga has also been to Chile."),
            ("The hotel offers free breakfast.", "The hotel offers an airport shuttle too."),
            ("I flew to Oslo on 5 March.", "I flew to Oslo on 28 November."),
            ("Our tour includes Florence.", "Our tour includes Siena."),
            ("The airline flies to Nairobi.", "The airline flies to Accra."),
            ("Ben holds an Irish passport.", "Ben also holds a British passport."),
        ],
        "schedules": [
            ("I have a standup at 9.", "I also have a retro at 4."),
            ("The library is open on Saturdays.", "The library is open on Sundays too."),
            ("Team lunch happened on 7 June.", "Team lunch happened on 19 July."),
            ("The piano lesson is on Wednesday.", "There is another piano lesson on Friday."),
        ],
        "money": [
            ("We accept Visa.", "We accept Mastercard as well."),
            ("I invested in index funds.", "I also invested in government bonds."),
            ("My savings account is with ING.", "My current account is with Revolut."),
            ("I paid the electricity bill on 1 March.", "I paid the electricity bill on 1 April."),
            ("The shop sells bikes.", "The shop sells scooters."),
            ("Our budget covers travel.", "Our budget covers training too."),
            ("Lea donates to Oxfam.", "Lea donates to the Red Cross."),
        ],
    },
    "distinct": {
        "personal": [
            ("My older brother lives in Leeds.", "My younger brother lives in Leeds."),
            ("The front door key is under the mat.", "The back door key is under the mat."),
            ("The red folder holds the invoices.", "The blue folder holds the invoices."),
            ("My cousin Lina is a nurse.", "My cousin Tara is a nurse."),
            ("My aunt lives near the lake.", "My uncle lives near the lake."),
            ("The dog's food is in the garage.", "The cat's food is in the garage."),
            ("The guest house needs a new roof.", "The main house needs a new roof."),
            ("The upstairs bathroom has a leak.", "The downstairs bathroom has a leak."),
            ("Ivan's son plays football.", "Ivan's daughter plays football."),
            ("Sam's mother is a teacher.", "Sam's stepmother is a teacher."),
            ("The kitchen light is broken.", "The hallway light is broken."),
            ("Noor is afraid of big dogs.", "Noor is afraid of small dogs."),
            ("The blue trail to the summit is steep.", "The green trail to the summit is steep."),
        ],
        "team": [
            ("Our main database is backed up nightly.",
             "Our analytics database is backed up nightly."),
            ("The staging API uses rate limiting.", "The production API uses rate limiting."),
            ("The iOS app crashes on launch.", "The Android app crashes on launch."),
            ("The public bucket is encrypted.", "The private bucket is encrypted."),
            ("The write replica is in Frankfurt.", "The read replica is in Frankfurt."),
            ("Unit tests run on every push.", "Integration tests run on every push."),
            ("The junior developers need new laptops.", "The senior developers need new laptops."),
            ("The internal docs are on Confluence.", "The public docs are on Confluence."),
            ("The US team meets on Tuesdays.", "The EU team meets on Tuesdays."),
            ("The old laptop has 8 GB of RAM.", "The new laptop has 8 GB of RAM."),
            ("The daily backup runs at midnight.", "The weekly backup runs at midnight."),
            ("The cold storage tier keeps data for a year.",
             "The hot storage tier keeps data for a year."),
        ],
        "health": [
            ("Eva's left knee hurts.", "Eva's right knee hurts."),
            ("Chen takes the blue pills at night.", "Chen takes the white pills at night."),
            ("I'm allergic to tree pollen.", "I'm allergic to grass pollen."),
            ("Jun is allergic to walnuts.", "Jun is allergic to pecans."),
            ("Ravi can't eat goat's cheese.", "Ravi can't eat cow's cheese."),
            ("The children's dentist is on Elm Road.", "The family doctor is on Elm Road."),
            ("My travel insurance covers skiing.", "My health insurance covers skiing."),
            ("Mila's first marathon was in Vienna.", "Mila's second marathon was in Vienna."),
        ],
        "travel": [
            ("The early train to Bern is often delayed.", "The last train to Bern is often delayed."),
            ("The outbound flight has a layover in Doha.", "The return flight has a layover in Doha."),
            ("The north entrance of the museum is closed.",
             "The south entrance of the museum is closed."),
            ("The toll road to the airport costs 4 euros.", "The bridge to the airport costs 4 euros."),
            ("The hiking boots are size 42.", "The running shoes are size 42."),
            ("The east wing of the hotel is being renovated.",
             "The west wing of the hotel is being renovated."),
        ],
        "schedules": [
            ("The morning shift starts at 6.", "The night shift starts at 6."),
            ("The small meeting room has a projector.", "The large meeting room has a projector."),
            ("Lunch with the new hire is on Thursday.", "Lunch with the new client is on Thursday."),
            ("The weekly report goes to finance.", "The monthly report goes to finance."),
            ("Decaf is served after 5 pm.", "Dessert is served after 5 pm."),
        ],
        "money": [
            ("My credit card bill is due on the 5th.", "My phone bill is due on the 5th."),
            ("The free plan includes 3 projects.", "The paid plan includes 3 projects."),
            ("Hot water is included in the rent.", "Heating is included in the rent."),
            ("The gluten-free bakery on Rua Augusta is cheap.",
             "The organic bakery on Rua Augusta is cheap."),
            ("The vegan menu has a lentil curry.", "The kids' menu has a lentil curry."),
            ("The Italian restaurant on Main Street closed.",
             "The Thai restaurant on Main Street closed."),
        ],
    },
    "negation": {
        "personal": [
            ("Kofi smokes cigars.", "Kofi quit smoking cigars."),
            ("I drink alcohol at weekends.", "I gave up alcohol."),
            ("Lucas works at the bank.", "Lucas left the bank."),
            ("I'm on the hiking club's mailing list.",
             "I'm no longer on the hiking club's mailing list."),
            ("We pay for a Netflix subscription.", "We cancelled the Netflix subscription."),
            ("Hana eats fish.", "Hana no longer eats fish."),
            ("Claire plays in a jazz band.", "Claire left the jazz band."),
            ("My son takes piano lessons.", "My son quit piano lessons."),
            ("I walk to work.", "I stopped walking to work."),
            ("Sofia volunteers at the animal shelter.",
             "Sofia quit volunteering at the animal shelter."),
            ("Ahmed is on the school board.", "Ahmed resigned from the school board."),
            ("The kids attend the French school.", "The kids left the French school."),
            ("Anna is vegetarian.", "Anna is not vegetarian any more."),
            ("We rent a parking space downtown.", "We gave up the parking space downtown."),
        ],
        "team": [
            ("We use Jira for tickets.", "We moved away from Jira."),
            ("The team runs a weekly retro.", "The team dropped the weekly retro."),
            ("Two-factor login is switched on for admins.",
             "Two-factor login is switched off for admins."),
            ("The nightly export is enabled.", "The nightly export is disabled."),
            ("We ship orders to Norway.", "We no longer ship orders to Norway."),
            ("The service writes logs to Elasticsearch.",
             "The service stopped writing logs to Elasticsearch."),
            ("We deploy on Fridays.", "We don't deploy on Fridays anymore."),
            ("The API supports XML responses.", "The API dropped support for XML responses."),
            ("Feature flags are managed in LaunchDarkly.", "We migrated off LaunchDarkly."),
            ("The team uses Terraform for infrastructure.", "The team dropped Terraform."),
            ("The VPN is required for the wiki.", "The VPN is no longer required for the wiki."),
            ("We store backups on tape.", "We phased out tape backups."),
            ("Priya is on the hiring panel.", "Priya is no longer on the hiring panel."),
            ("The office has a ping-pong table.", "The office got rid of the ping-pong table."),
        ],
        "health": [
            ("Maya goes to the gym on Fridays.", "Maya stopped going to the gym on Fridays."),
            ("Rafael takes ibuprofen for his back.", "Rafael stopped taking ibuprofen for his back."),
            ("I drink coffee every day.", "I've stopped drinking coffee."),
            ("Lars is on blood pressure medication.", "Lars is off his blood pressure medication."),
            ("I use a standing desk.", "I'm not using a standing desk anymore."),
            ("Leah works night shifts at the hospital.",
             "Leah no longer works night shifts at the hospital."),
            ("My mum sees a physiotherapist.", "My mum doesn't see a physiotherapist any more."),
        ],
        "travel": [
            ("The cafe near the station serves brunch.",
             "The cafe near the station stopped serving brunch."),
            ("The Lisbon trip is booked for May.", "We cancelled the Lisbon trip."),
            ("The hotel has a heated pool.", "The hotel closed its heated pool."),
            ("I take the bus to the airport.", "I gave up taking the bus to the airport."),
            ("The airline flies direct to Lima.", "The airline no longer flies direct to Lima."),
        ],
        "schedules": [
            ("There is a team demo every Friday.", "The Friday team demo was cancelled."),
            ("The Tuesday call with the vendor is recurring.",
             "The Tuesday call with the vendor was cancelled."),
            ("The bakery delivers on Sundays.", "The bakery doesn't deliver on Sundays."),
            ("The newsletter goes out every Monday.", "We discontinued the Monday newsletter."),
            ("The weekly API key rotation is switched on.",
             "The weekly API key rotation is switched off."),
        ],
        "money": [
            ("We're on the premium plan.", "We downgraded from the premium plan."),
            ("We bank with Barclays.", "We closed our account with Barclays."),
            ("The monthly budget includes a gym membership.",
             "I cancelled the gym membership."),
            ("I pay into a private pension.", "I stopped paying into the private pension."),
            ("We donate to the food bank every month.", "We no longer donate to the food bank."),
        ],
    },
    "update": {
        "personal": [
            ("She lives in Utrecht.", "She lives in Eindhoven."),
            ("My manager is Olena.", "My manager is Bart."),
            ("I own two cars.", "I own three cars."),
            ("Her phone number is 0612 345 678.", "Her phone number is 0687 654 321."),
            ("Our Wi-Fi network name is HomeNet.", "Our Wi-Fi network name is CasaNet."),
            ("Tomas is 34.", "Tomas is 35."),
            ("He works for Deloitte.", "He works for KPMG now."),
            ("We use Jira for bug tracking.", "We use Linear for bug tracking instead."),
            ("The kids' bedtime is 8 pm.", "The kids' bedtime is 8:30 pm."),
        ],
        "team": [
            ("The build server runs Ubuntu 20.04.", "The build server runs Ubuntu 22.04."),
            ("Ubuntu 20.04 is what the build server runs.",
             "Ubuntu 22.04 is what the build server runs."),
            ("Upload limit: 25 MB.", "Upload limit: 50 MB."),
            ("The Redis version is 6.2.", "The Redis version is 7.2."),
            ("Grafana runs on port 3000.", "Grafana runs on port 3100."),
            ("The team tracks bugs in Jira.", "The team now tracks bugs in Linear."),
            ("Max connections: 100.", "Max connections: 250."),
            ("Node 16 is what the frontend build uses.", "Node 20 is what the frontend build uses."),
            ("Python 3.9 is the version on the CI runners.",
             "Python 3.12 is the version on the CI runners."),
            ("The SLA for P1 incidents is 1 hour.", "The SLA for P1 incidents is 30 minutes."),
            ("The cluster has 12 nodes.", "The cluster has 16 nodes."),
            ("The team lead for payments is Irina.", "The team lead for payments is Marco."),
            ("It listens on port 8443.", "It listens on port 9443."),
            ("Default branch: master.", "Default branch: main."),
        ],
        "health": [
            ("Lena's GP is Dr. Haas.", "Lena's GP is Dr. Yilmaz."),
            ("My dose of sertraline is 50 mg.", "My dose of sertraline is 100 mg."),
            ("Blood pressure target: 130/80.", "Blood pressure target: 120/80."),
            ("My weight is 82 kg.", "My weight is 79 kg."),
            ("He takes 2 insulin shots a day.", "He takes 3 insulin shots a day."),
            ("The allergy clinic appointment is on 9 May.",
             "The allergy clinic appointment is on 23 May."),
        ],
        "travel": [
            ("The flight to Lima leaves at 06:40.", "The flight to Lima leaves at 07:55."),
            ("Our hotel in Rome is the Hotel Arco.", "Our hotel in Rome is the Hotel Sole."),
            ("The check-in time is 3 pm.", "The check-in time is 2 pm."),
            ("The car rental pickup is at Terminal 2.", "The car rental pickup is at Terminal 1."),
            ("Our gate for the Madrid flight is B12.", "Our gate for the Madrid flight is C4."),
            ("The ferry to Hvar departs at 10:30.", "The ferry to Hvar now departs at 11:15."),
        ],
        "schedules": [
            ("Piano practice is at 5 pm.", "Piano practice is at 6 pm."),
            ("The parent-teacher meeting is on 12 November.",
             "The parent-teacher meeting is on 19 November."),
            ("Sprint planning happens on Mondays.", "Sprint planning happens on Tuesdays."),
            ("The meeting with the landlord is on Friday.",
             "The meeting with the landlord was moved to Monday."),
            ("The dentist appointment is at 10:15.", "The dentist appointment got moved to 11:45."),
            ("The contract renewal date is 1 March 2026.", "The contract renewal date is 1 April 2026."),
            ("Choir rehearsal starts at 19:00.", "Choir rehearsal starts at 19:30 now."),
        ],
        "money": [
            ("Our gym membership costs 35 euros a month.",
             "Our gym membership costs 42 euros a month."),
            ("My salary is 58,000 a year.", "My salary is 63,000 a year."),
            ("The electricity tariff is 0.31 per kWh.", "The electricity tariff is 0.27 per kWh."),
            ("The car insurance premium is 640 euros.", "The car insurance premium is 710 euros."),
            ("Our monthly cloud bill is about 4,000 dollars.",
             "Our monthly cloud bill is about 5,500 dollars."),
            ("Rent: 950 euros.", "Rent: 1,050 euros."),
            ("The savings goal for the holiday is 2,000 pounds.",
             "The savings goal for the holiday is 2,500 pounds."),
            ("I pay 12 dollars a month for cloud storage.", "I pay 15 dollars a month for cloud storage."),
        ],
    },
    "duplicate": {
        "personal": [
            ("I'm allergic to shellfish.", "I am allergic to shellfish."),
            ("I've been to Vietnam twice.", "I have been to Vietnam twice."),
            ("It's my turn to host the book club.", "It is my turn to host the book club."),
            ("After lunch, Grandpa takes a nap.", "Grandpa takes a nap after lunch."),
            ("Kim is lactose intolerant.", "Just so you know, Kim is lactose intolerant."),
            ("Honestly, I don't like horror films.", "I don't like horror films."),
            ("She's a paediatric nurse.", "She is a paediatric nurse."),
            ("I've got two sisters.", "I have got two sisters."),
            ("Remember that Omar doesn't eat pork.", "Omar doesn't eat pork."),
            ("Well, I usually cycle to work.", "I usually cycle to work."),
            ("I don't eat gluten.", "I do not eat gluten."),
            ("With clients, Pedro always speaks Spanish.", "Pedro always speaks Spanish with clients."),
        ],
        "team": [
            ("They've moved the standup to 10.", "They have moved the standup to 10."),
            ("Every Tuesday, the team reviews the roadmap.", "The team reviews the roadmap every Tuesday."),
            ("Basically, the staging cluster restarts every night.",
             "The staging cluster restarts every night."),
            ("For the billing service, we use Python 3.12.", "We use Python 3.12 for the billing service."),
            ("Note that the API rate limit resets hourly.", "The API rate limit resets hourly."),
            ("At night, the backup job compresses the logs.",
             "The backup job compresses the logs at night."),
            ("Quick note: the VPN gateway is vpn2.example.org.", "The VPN gateway is vpn2.example.org."),
            ("Deployments are frozen during December.", "During December, deployments are frozen."),
            ("Liv's the new head of design.", "Liv is the new head of design."),
            ("Every quarter, finance closes the books.", "Finance closes the books every quarter."),
            ("Okay, so the team offsite is in Lisbon.", "The team offsite is in Lisbon."),
            ("Marco's the one who signs the invoices.", "Marco is the one who signs the invoices."),
            ("The on-call rota changes on Mondays.", "The on-call rota changes on Mondays."),
        ],
        "health": [
            ("Before breakfast, Mum takes her thyroid pill.", "Mum takes her thyroid pill before breakfast."),
            ("Twice a week, I swim at the lido.", "I swim at the lido twice a week."),
            ("By the way, my GP retires next year.", "My GP retires next year."),
            ("He's allergic to bee stings.", "He is allergic to bee stings."),
            ("We haven't booked the flu jabs yet.", "We have not booked the flu jabs yet."),
            ("In winter, we keep the heating at 20 degrees.", "We keep the heating at 20 degrees in winter."),
        ],
        "travel": [
            ("We're flying to Athens on Friday.", "We are flying to Athens on Friday."),
            ("We'll be in Porto until Sunday.", "We will be in Porto until Sunday."),
            ("When travelling, Ali always carries a power bank.",
             "Ali always carries a power bank when travelling."),
            ("In Berlin, we stay with my aunt.", "We stay with my aunt in Berlin."),
            ("By the way, my passport expires in 2027.", "My passport expires in 2027."),
            ("They're moving to Valencia in the spring.", "They are moving to Valencia in the spring."),
            ("I'd prefer window seats on long flights.", "I would prefer window seats on long flights."),
        ],
        "schedules": [
            ("If it rains, the match is moved indoors.", "The match is moved indoors if it rains."),
            ("Heads up, the parking garage closes at 11 pm.", "The parking garage closes at 11 pm."),
            ("As I said, my son's school starts at 8:15.", "My son's school starts at 8:15."),
            ("So, the quarterly review is on 14 October.", "The quarterly review is on 14 October."),
            ("The car's in the garage until Thursday.", "The car is in the garage until Thursday."),
            ("On Sundays, the market opens at 8.", "The market opens at 8 on Sundays."),
        ],
        "money": [
            ("To be clear, the budget for the trip is 3,000 euros.", "The budget for the trip is 3,000 euros."),
            ("For the record, the invoice was paid on 3 May.", "The invoice was paid on 3 May."),
            ("Invoices over 500 euros need two approvals.", "Invoices over 500 euros need two approvals!"),
            ("We haven't paid the plumber yet.", "We have not paid the plumber yet."),
            ("Each month, I move 200 euros into savings.", "I move 200 euros into savings each month."),
            ("FYI, the landlord wants the rent by bank transfer.",
             "The landlord wants the rent by bank transfer."),
        ],
    },
}

#: Logged turns (``record``): (old, new), each written with the options of its
#: position in :data:`_RECORD_OPTIONS` (cycled): whatever the second says, it is added.
_RECORDS: dict[str, list[tuple[str, str]]] = {
    "personal": [
        ("user: I live in Ghent.", "user: I live in Antwerp now."),
        ("user: I love cycling.", "user: I don't love cycling anymore."),
        ("user: Thanks, that helps.", "user: Thanks, that helps."),
        ("I have two kids.", "I have three kids."),
        ("user: My sister is called Ines.", "user: My sister is called Ines."),
        ("user: I'm a vegetarian.", "assistant: You're a vegetarian, noted."),
        ("My favourite colour is green.", "My favourite colour is orange."),
        ("user: I quit my job last week.", "user: I quit my job last week."),
        ("user: ok", "user: ok"),
    ],
    "team": [
        ("user: The API runs on port 8080.", "user: The API runs on port 8081."),
        ("user: We use Postgres 14.", "assistant: You use Postgres 14, so the upgrade is easy."),
        ("We deploy on Fridays.", "We do not deploy on Fridays."),
        ("user: The build is broken.", "user: The build is broken."),
        ("The staging host is stage1.internal.", "The staging host is stage2.internal."),
        ("user: Can you check the logs?", "assistant: Can you share the logs?"),
        ("user: The release is on 2 June.", "user: The release moved to 9 June."),
        ("Our team lead is Ada.", "Our team lead is Grace."),
        ("user: yes, merge it", "user: yes, merge it"),
    ],
    "health": [
        ("user: I take 20 mg of omeprazole.", "user: I take 40 mg of omeprazole."),
        ("user: I stopped running.", "user: I stopped running."),
        ("I'm allergic to cats.", "I am allergic to cats."),
        ("user: My knee hurts.", "assistant: Your knee hurts; when did it start?"),
        ("user: I sleep badly.", "user: I don't sleep badly any more."),
        ("My blood pressure was 140/90.", "My blood pressure was 125/80."),
        ("user: I smoke.", "user: I quit smoking."),
        ("user: Thanks for the tips.", "user: Thanks for the tips."),
    ],
    "travel": [
        ("user: My flight leaves at 7 am.", "user: My flight leaves at 9 am."),
        ("user: We're going to Rome.", "assistant: You're going to Rome; here is a plan."),
        ("I booked the Hotel Lux.", "I booked the Hotel Lux."),
        ("user: The train is late.", "user: The train is not late."),
        ("user: We visited Krakow.", "user: We visited Krakow."),
        ("Our gate is A3.", "Our gate is A7."),
        ("user: Where is the hotel?", "assistant: Where would you like the hotel to be?"),
        ("user: I lost my passport.", "user: I lost my passport."),
    ],
    "schedules": [
        ("user: The meeting is on Monday.", "user: The meeting is on Tuesday."),
        ("user: Remind me at 5.", "user: Remind me at 5."),
        ("Dentist at 10:30.", "Dentist at 11:00."),
        ("user: Standup is cancelled today.", "assistant: Standup is cancelled today, noted."),
        ("user: I'm free on Friday.", "user: I'm not free on Friday."),
        ("The school run is at 8.", "The school run is at 8."),
        ("user: Piano is at 4 pm.", "user: Piano moved to 5 pm."),
    ],
    "money": [
        ("user: My budget is 2,000 euros.", "user: My budget is 2,500 euros."),
        ("user: I paid the rent.", "user: I paid the rent."),
        ("We bank with Monzo.", "We no longer bank with Monzo."),
        ("user: The invoice is 300 euros.", "assistant: The invoice is 300 euros; shall I pay it?"),
        ("My salary is 4,000 a month.", "My salary is 4,200 a month."),
        ("user: I cancelled Spotify.", "user: I cancelled Spotify."),
        ("user: I use Revolut.", "user: I use Wise too."),
        ("Rent is due on the 1st.", "Rent is due on the 1st."),
    ],
}

#: How the turns of :data:`_RECORDS` are logged, in turn: (old options, new options).
_RECORD_OPTIONS: tuple[tuple[dict[str, Any], dict[str, Any]], ...] = (
    ({"type": "episodic"}, {"type": "episodic"}),
    ({"on_duplicate": "keep"}, {"on_duplicate": "keep"}),
    ({"metadata": {"role": "user"}}, {"metadata": {"role": "assistant"}}),
    ({"metadata": {"role": "user"}}, {"metadata": {"role": "user"}}),
    ({"type": "episodic", "on_duplicate": "keep", "metadata": {"role": "user"}},
     {"type": "episodic", "on_duplicate": "keep", "metadata": {"role": "user"}}),
)  # fmt: skip


def _build() -> list[WritePair]:
    pairs = [
        WritePair(old, new, category, domain)
        for category, domains in _RAW.items()
        for domain, rows in domains.items()
        for old, new in rows
    ]
    n = 0
    for domain, rows in _RECORDS.items():
        for old, new in rows:
            old_opts, new_opts = _RECORD_OPTIONS[n % len(_RECORD_OPTIONS)]
            pairs.append(WritePair(old, new, "record", domain, old_opts, new_opts))
            n += 1
    return pairs


PAIRS: list[WritePair] = _build()
