"""The long-text set (issue 28): long records whose only relevant sentence sits at their
start, in their middle or at their end, among long and short distractors.

Written for this bench (session 2026-12-05b, R28) and committed BEFORE any chunk scoring
was tuned, so that a rule tuned on LongMemEval (where long turns are mostly non-evidence
assistant answers) cannot silently lose what lies past a long record's first window.

Every text is hand-written here; the set is composed deterministically (no randomness that
depends on the machine):

- 45 *fact records*: one personal fact, worded differently from its question, put at the
  start (15), in the middle (15) or at the end (15) of a long record made of seven filler
  paragraphs (about 650 model tokens, so the middle and end facts lie past the first
  254-token window of all-MiniLM-L6-v2, where a whole-text embedding never reads them);
- 12 *topical long distractors*: long records whose tail talks about the topic of a
  question in general terms (advice, not the user's fact), the LongMemEval failure mode of
  a long assistant answer that comes near a question;
- 12 long records of filler only, and 20 short personal notes on other matters.

``questions()`` returns ``(qid, qtype, question, docs, evidence)`` tuples over one shared
haystack (``qtype`` is the fact's position: start / middle / end).
"""

from __future__ import annotations

FILLERS = (
    "The history of suspension bridges is a story of cables. Early designs hung the deck from chains of "
    "wrought-iron bars, which were heavy and failed without warning when a single link cracked. Spinning "
    "cables from thousands of parallel steel wires, each no thicker than a pencil, let engineers span far "
    "wider rivers, because a broken wire sheds its load to its neighbours instead of dropping the deck.",
    "To make a sourdough starter, mix equal weights of whole-grain flour and lukewarm water in a glass jar, "
    "cover it loosely and leave it somewhere warm. Each day discard half and feed it again with fresh flour "
    "and water. After about a week it should double within six hours of a feeding and smell pleasantly "
    "sour; that is the sign it is ready to leaven a loaf.",
    "When you package a Python library, keep the version in one place and let the build backend read it. "
    "Declare your dependencies with lower bounds rather than exact pins, since pins belong in an "
    "application's lock file, not in a library that other projects install alongside their own "
    "requirements. Build both a source distribution and a wheel, and test the wheel in a clean environment.",
    "Tomatoes want at least six hours of direct sun and soil that drains well. Water deeply at the base "
    "twice a week rather than a little every day, so that roots grow down instead of staying near the "
    "surface. Pinch out the side shoots of cordon varieties, and once the plant has set four or five "
    "trusses, stop it by removing the growing tip so that the fruit ripens before autumn.",
    "Jupiter's four largest moons were discovered in 1610 and were the first bodies seen to orbit "
    "something other than the Earth. Io is volcanically active because tidal flexing heats its interior, "
    "Europa hides a salty ocean beneath an icy crust, Ganymede is larger than the planet Mercury, and "
    "Callisto's surface is among the most heavily cratered in the solar system.",
    "A good meeting agenda lists the decisions to be made, not just the topics to be discussed. Send it a "
    "day ahead with any reading attached, so that people arrive having thought about it. Keep a running "
    "list of actions with an owner and a date for each, and close the meeting by reading that list aloud "
    "so that nobody leaves unsure of what they agreed to do.",
    "Espresso is brewed by forcing water at about nine bars of pressure through finely ground, tightly "
    "packed coffee. If the shot runs too fast and tastes sour, grind finer; if it runs slowly and tastes "
    "bitter, grind coarser. A typical double shot uses eighteen grams of coffee and yields about thirty-six "
    "grams of liquid in twenty-five to thirty seconds.",
    "The Silk Road was never a single road but a web of caravan routes linking China with Central Asia, "
    "Persia and the Mediterranean. Merchants rarely travelled its whole length; goods passed from hand to "
    "hand through oasis towns such as Samarkand and Kashgar. Along with silk and spices, the routes carried "
    "religions, technologies like papermaking, and, less happily, the plague.",
    "To change a flat bicycle tyre, shift to the smallest cog, open the brake and remove the wheel. Use "
    "tyre levers to lift one bead over the rim, pull out the tube and run your fingers carefully inside the "
    "tyre to find whatever caused the puncture. Fit the new tube slightly inflated so it does not twist, "
    "then work the bead back on with your thumbs.",
    "Index funds track a market index instead of trying to beat it, which keeps their fees low. Over long "
    "periods most actively managed funds fail to outperform their benchmark once costs are counted. The "
    "usual advice is to hold a diversified mix, rebalance once a year, and avoid selling in a panic when "
    "prices fall, since missing the best days of a recovery costs dearly.",
    "Octopuses have three hearts and blue blood, and two thirds of their neurons sit in their arms rather "
    "than in their central brain. Each arm can taste what it touches and react on its own. They are famous "
    "escape artists in aquariums, able to squeeze through any gap larger than their beak, the only hard "
    "part of their body.",
    "A version control commit message should say why a change was made, not only what changed, because "
    "the diff already shows the what. Write a short summary line in the imperative mood, leave a blank "
    "line, then explain the reasoning, the alternatives you rejected and anything a reviewer should test. "
    "Future maintainers searching the history will thank you.",
    "The Roman aqueducts carried water by gravity alone, dropping only a few metres over dozens of "
    "kilometres. Engineers used tunnels through hills and arcades of arches across valleys to keep the "
    "gradient steady. At the city end, water flowed into distribution tanks that fed public fountains "
    "first, then baths, and private houses last.",
    "Learning to juggle three balls starts with one. Throw it from hand to hand in an arc that peaks just "
    "above eye level. Add a second ball and throw it when the first reaches its peak. Only when that "
    "exchange feels calm should you add the third; most people manage a few cycles within an hour of "
    "practice, and a steady pattern within a week.",
    "Glaciers move because ice under its own weight deforms slowly, like very stiff putty, and because "
    "meltwater at the base lets the ice slide over the rock. As they move they pluck boulders from the "
    "bed and grind them along, carving U-shaped valleys and leaving heaps of debris called moraines where "
    "the ice finally melts back.",
    "When writing a cover letter, open with the specific role and one sentence on why you fit it. Use the "
    "middle paragraph for two concrete achievements with numbers, chosen to match what the advertisement "
    "asks for. Close by saying you would welcome a conversation, and keep the whole letter to a single "
    "page; recruiters skim.",
    "Chess openings follow a few principles: control the centre with pawns and pieces, develop knights "
    "before bishops, castle early to shelter the king, and avoid moving the same piece twice without a "
    "reason. Memorising long lines matters far less, at club level, than understanding why the first "
    "moves are played.",
    "Honeybees communicate the direction of food with a waggle dance performed on the vertical comb. The "
    "angle of the waggle run relative to straight up matches the angle of the food source relative to the "
    "sun, and the duration of the run tells how far away it is. Foragers that follow the dance fly out "
    "and find the flowers on their own.",
    "Backups follow the three-two-one rule: keep three copies of your data, on two different kinds of "
    "storage, with one copy off site. A backup you have never restored is only a hope, so test a restore "
    "every few months. Automate the copying, because a backup that depends on remembering to do it will "
    "eventually be forgotten.",
    "Venice is built on wooden piles driven into the mud of the lagoon. Deprived of oxygen, the alder and "
    "oak did not rot but slowly hardened. The city's main problem today is not its foundations but the "
    "acqua alta, high tides that flood its squares several times a year, which mobile barriers at the "
    "lagoon inlets now try to hold back.",
    "A small vegetable soup needs little more than an onion, a carrot, a stick of celery, a potato and "
    "stock. Soften the onion slowly in butter, add the rest chopped small, cover with stock and simmer "
    "for twenty minutes. Blend half of it and stir it back for body, then season at the end, since stock "
    "is often salty already.",
    "Public key cryptography uses a pair of keys: what one encrypts only the other can decrypt. Publishing "
    "the public key lets anyone send you a secret, while signing with the private key lets anyone check "
    "that a message came from you. The security rests on problems, such as factoring large numbers, that "
    "are easy to set up and very hard to reverse.",
    "Marathon training plans usually run for sixteen to twenty weeks and build the weekly long run "
    "gradually, by no more than about ten percent a week. Most miles should be easy enough to hold a "
    "conversation. A three-week taper before race day lets the legs recover, and practising race-day "
    "food and drink on long runs avoids unpleasant surprises.",
    "The printing press spread across Europe within fifty years of Gutenberg's first Bible. Movable metal "
    "type, an oil-based ink and a press adapted from wine making made books cheap enough for merchants and "
    "students. Literacy rose, vernacular languages gained standard spellings, and ideas travelled faster "
    "than any authority could suppress them.",
)

#: (fact, question, position): the question is worded differently from the fact
FACTS = (
    ("I keep my passport in the blue folder in the bottom drawer of my desk.", "Where did I put my travel document?", "start"),
    ("My sister Noor is allergic to peanuts, so we never bring satay to her place.", "Which food must I avoid when visiting my sibling?", "middle"),
    ("The spare key to our flat is hidden under the third flowerpot by the back door.", "If I lock myself out, where can I find another way in?", "end"),
    ("I pay 1,450 euros a month in rent for the apartment on Linden Street.", "How much does my housing cost me each month?", "start"),
    ("My dentist appointment is on the 14th of March at half past nine.", "When am I due to get my teeth checked?", "middle"),
    ("Our cat Miso only eats the salmon flavour of the dry food.", "What does my pet refuse to eat apart from one kind?", "end"),
    ("I switched my phone plan to the carrier Orbit because it has better rural coverage.", "Which mobile provider am I with now?", "start"),
    ("My blood type is O negative, according to the card from the donation centre.", "What kind of blood do I have?", "middle"),
    ("The wifi password at my parents' house is written on the fridge: lemontree42.", "How do I get online when staying with my mum and dad?", "end"),
    ("I am learning Portuguese because we are moving to Lisbon next spring.", "Which language am I studying, and why?", "start"),
    ("My car is due for its annual inspection in September.", "When does my vehicle need its yearly check?", "middle"),
    ("I stopped drinking coffee after three in the afternoon because it ruined my sleep.", "Why do I avoid caffeine late in the day?", "end"),
    ("My employee number at the hospital is 55821.", "What is my staff ID at work?", "start"),
    ("I left my winter coat at Tomasz's flat after the party.", "Where is my warm jacket?", "middle"),
    ("Grandma's birthday is on the second of November and she likes lilies.", "When should I send flowers to my grandmother, and which ones?", "end"),
    ("I run five kilometres along the canal every Tuesday and Thursday morning.", "What exercise do I do during the week?", "start"),
    ("My son's school starts at 8:10 and the gate closes at 8:20.", "What time must my boy be dropped off?", "middle"),
    ("The boiler was serviced in January by a technician named Ilse.", "When was the heating last maintained?", "end"),
    ("I am vegetarian but I still eat fish once a week.", "What is my diet like?", "start"),
    ("I lent my cordless drill to the neighbour at number 12.", "Who has my power tool at the moment?", "middle"),
    ("My flight to Toronto leaves from terminal 2 at 6:45 in the morning.", "When and from where does my plane to Canada depart?", "end"),
    ("I prefer aisle seats on planes because I get up a lot on long flights.", "Which seat do I like when flying?", "start"),
    ("Our home insurance policy renews automatically on the first of June.", "When does cover for the house roll over?", "middle"),
    ("I take 50 milligrams of sertraline every morning with breakfast.", "What medication am I on, and when do I take it?", "end"),
    ("My bank changed my card PIN reminder to be sent only by post.", "How will I get the code for my bank card?", "start"),
    ("My favourite author is Ursula Le Guin; I reread The Dispossessed every few years.", "Which writer do I admire most?", "middle"),
    ("The plumber said the kitchen sink leak came from a cracked trap under the basin.", "What caused the water under the kitchen sink?", "end"),
    ("I am saving for a sailing course in Croatia next August.", "What am I putting money aside for?", "start"),
    ("My daughter Lena plays the cello in the youth orchestra on Saturdays.", "Which instrument does my girl play, and when?", "middle"),
    ("I cancelled the gym membership in October because I never went.", "Do I still belong to a fitness club?", "end"),
    ("My laptop's warranty runs until the end of next year.", "How long is my computer covered for repairs?", "start"),
    ("I planted garlic in the raised bed by the shed in late autumn.", "What did I put in the ground before winter?", "middle"),
    ("The library books are due back on the 21st, or I pay a fine.", "When do I have to return what I borrowed from the library?", "end"),
    ("My allergy is to penicillin; I break out in hives.", "Which antibiotic must doctors not give me?", "start"),
    ("My manager Farid approved my leave for the last two weeks of July.", "When is my holiday from work?", "middle"),
    ("I parked the car on level 3 of the station garage, near the lifts.", "Where did I leave my vehicle?", "end"),
    ("I speak to my brother in Melbourne every Sunday evening on video.", "How often do I call my sibling abroad?", "start"),
    ("The recipe my father taught me for goulash uses smoked paprika and caraway.", "Which spices go into my dad's stew?", "middle"),
    ("My shoe size is 43 in European sizes, 9 in UK sizes.", "What size footwear do I wear?", "end"),
    ("I get motion sickness on boats, so I take ginger tablets before ferries.", "What do I do to avoid feeling ill at sea?", "start"),
    ("Our wedding anniversary is on the 30th of May; we married in Ghent.", "When and where did I get married?", "middle"),
    ("I backed up my photos to the external drive labelled ARCHIVE-2.", "Where are copies of my pictures stored?", "end"),
    ("My tax return is handled by an accountant called Mrs Okafor.", "Who does my taxes?", "start"),
    ("I volunteer at the food bank on the first Saturday of each month.", "What charity work do I do?", "middle"),
    ("The password manager I use is set to lock after five minutes idle.", "How quickly does my password vault lock itself?", "end"),
)

#: general talk about a question's topic (not the user's fact), put in the tail of a long record
TOPICAL = (
    ("end", "Travel tip: many people keep passports in a hotel safe, and a photocopy in a separate bag is wise."),
    ("middle", "Peanut allergies are among the most common food allergies in children and can be severe."),
    ("end", "Locksmiths recommend never hiding a spare key under a doormat, where burglars look first."),
    ("middle", "Rents in most large European cities rose sharply over the last decade."),
    ("end", "Dentists generally advise a check-up and a cleaning every six to twelve months."),
    ("middle", "Cats can be fussy eaters; changing food gradually over a week helps them accept it."),
    ("end", "Caffeine has a half-life of about five hours, which is why late coffee disturbs sleep."),
    ("middle", "Blood donation centres usually ask donors to wait eight weeks between donations."),
    ("end", "Airlines often charge extra to pick a seat in advance, especially by the aisle or exit row."),
    ("middle", "Home insurance premiums depend on the rebuild cost of the house, not its market price."),
    ("end", "Public libraries increasingly drop late fines because they keep poorer readers away."),
    ("middle", "Motion sickness happens when the eyes and the inner ear disagree about movement."),
)

SHORT = (
    "Buy more oat milk and a loaf of rye bread.",
    "The recycling is collected every other Wednesday.",
    "Call the council about the broken streetlight on our corner.",
    "I liked the new Thai place on Market Street, especially the green curry.",
    "Remember to water the fern in the bathroom.",
    "Book tickets for the jazz concert in April.",
    "My friend Amara recommended a podcast about urban planning.",
    "The printer at home needs a new black cartridge.",
    "Return the parcel of shoes that were too small.",
    "We watched a documentary on deep sea fish last night.",
    "The window in the spare room sticks when it rains.",
    "I want to try bouldering at the climbing hall.",
    "The electricity meter reading was 40213 in February.",
    "Ask the landlord about painting the hallway.",
    "I should renew my library card online.",
    "The plants on the balcony need repotting this spring.",
    "I forgot my umbrella at the cinema.",
    "Send the slides to the team before Friday.",
    "The neighbours' dog barks at the postman every morning.",
    "I found a good second-hand bookshop near the river.",
)

PARAGRAPHS_PER_RECORD = 7


def _fillers(index: int, count: int = PARAGRAPHS_PER_RECORD) -> list[str]:
    """``count`` distinct filler paragraphs for record ``index`` (a fixed stride walk)."""
    n = len(FILLERS)
    stride = (5, 7, 11, 13)[index % 4]
    return [FILLERS[(index * 3 + j * stride) % n] for j in range(count)]


def _place(sentence: str, position: str, paragraphs: list[str]) -> str:
    parts = list(paragraphs)
    if position == "start":
        parts[0] = sentence + " " + parts[0]
    elif position == "middle":
        parts.insert(4, sentence)  # after four paragraphs (about 400 tokens): past the first window
    else:
        parts[-1] = parts[-1] + " " + sentence
    return "\n\n".join(parts)


def docs() -> list[tuple[str, str]]:
    """The shared haystack: ``(doc id, text)``."""
    out = [(f"lt{i}", _place(fact, position, _fillers(i))) for i, (fact, _, position) in enumerate(FACTS)]
    base = len(FACTS)
    out += [(f"ltd{i}", _place(text, position, _fillers(base + i))) for i, (position, text) in enumerate(TOPICAL)]
    base += len(TOPICAL)
    out += [(f"ltf{i}", "\n\n".join(_fillers(base + i))) for i in range(12)]
    out += [(f"lts{i}", text) for i, text in enumerate(SHORT)]
    return out


def questions() -> list[tuple[str, str, str, list[tuple[str, str]], list[str]]]:
    haystack = docs()
    return [(f"lq{i}", position, question, haystack, [f"lt{i}"]) for i, (_, question, position) in enumerate(FACTS)]
