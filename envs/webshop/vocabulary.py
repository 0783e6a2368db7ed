"""Word lists behind the generated WebShop catalogue (invented products, not Amazon data).

Each :class:`ProductType` mirrors one upstream search ``query`` (upstream collected products
by query inside five categories: beauty, electronics, fashion, food, furniture), with its
``product_category`` path, the attributes products of that type are described with, the
option axes a buyer chooses on the item page, and a price range.

Instructions name a product type by one of its ``phrases`` and each attribute by one of
:data:`ATTRIBUTE_PHRASES`. Only the first phrase repeats the catalogue's own words; the others
paraphrase them, so copying the instruction into the search box is not always the best query.
"""

from __future__ import annotations

from dataclasses import dataclass

COLORS = (
    "black", "white", "navy blue", "light grey", "dark brown", "red", "pink", "olive green",
    "beige", "burgundy", "khaki", "charcoal", "teal", "lavender", "mustard yellow",
)  # fmt: skip
APPAREL_SIZES = ("small", "medium", "large", "x-large", "xx-large")
SHOE_SIZES = ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12")
BED_SIZES = ("twin", "full", "queen", "king")


@dataclass(frozen=True)
class ProductType:
    """One kind of product in the generated catalogue.

    Attributes:
        category: Upstream's top-level ``category`` (beauty, electronics, ...).
        query: Upstream's ``query`` field: the search that collected the product.
        noun: The product noun used in titles.
        phrases: Ways an instruction names the product, with article; the first uses the
            catalogue's words.
        path: ``product_category``: levels joined by `` › ``.
        attributes: Attributes a product of this type may have (upstream ``Attributes``).
        options: Option axes: (name, values). A product offers a subset of each axis.
        price: Price range in dollars.
        extras: Title endings.
    """

    category: str
    query: str
    noun: str
    phrases: tuple[str, ...]
    path: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    price: tuple[float, float]
    extras: tuple[str, ...]


def _t(category, query, noun, phrases, path, attributes, options, price, extras):
    return ProductType(
        category, query, noun, tuple(phrases), path, tuple(attributes),
        tuple((k, tuple(v)) for k, v in options), price, tuple(extras),
    )  # fmt: skip


_BEAUTY = "Beauty & Personal Care"
_ELEC = "Electronics"
_FASHION = "Clothing, Shoes & Jewelry"
_FOOD = "Grocery & Gourmet Food"
_HOME = "Home & Kitchen"

# fmt: off
PRODUCT_TYPES: tuple[ProductType, ...] = (
    _t("beauty", "shampoo", "Shampoo",
       ["a shampoo", "a hair wash", "a bottle of hair cleanser"],
       f"{_BEAUTY} › Hair Care › Shampoo & Conditioner › Shampoos",
       ["sulfate free", "paraben free", "natural ingredients", "dry hair", "cruelty free",
        "hair growth", "color safe"],
       [("scent", ["lavender", "coconut", "tea tree", "citrus", "unscented", "rosemary mint"]),
        ("size", ["8 fl oz", "12 fl oz", "16 fl oz", "33.8 fl oz"])],
       (6, 45), ["for Women and Men", "for Daily Use", "Salon Formula"]),
    _t("beauty", "face moisturizer", "Face Moisturizer",
       ["a face moisturizer", "a facial cream", "a daily face lotion"],
       f"{_BEAUTY} › Skin Care › Face › Creams & Moisturizers",
       ["dry skin", "fragrance free", "hyaluronic acid", "cruelty free", "anti aging",
        "non greasy", "sensitive skin"],
       [("size", ["1 oz", "1.7 oz", "2.5 oz", "3.4 oz"])],
       (9, 60), ["for All Skin Types", "Day and Night Cream", "Oil Free Formula"]),
    _t("beauty", "lipstick", "Lipstick",
       ["a lipstick", "a lip color", "a tube of lip paint"],
       f"{_BEAUTY} › Makeup › Lips › Lipstick",
       ["long lasting", "highly pigmented", "cruelty free", "paraben free", "matte finish",
        "moisturizing formula"],
       [("color", ["ruby red", "nude", "berry", "coral", "mauve", "plum", "classic pink"])],
       (5, 30), ["Creamy Finish", "Full Coverage", "Lip Makeup"]),
    _t("beauty", "nail polish", "Nail Polish",
       ["a nail polish", "a nail lacquer", "some nail paint"],
       f"{_BEAUTY} › Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish",
       ["quick drying", "long lasting", "non toxic", "high gloss", "chip resistant", "vegan"],
       [("color", ["ruby red", "nude", "coral", "lavender", "navy blue", "mint green"]),
        ("size", ["pack of 3", "pack of 6"])],
       (4, 25), ["Salon Quality", "Gel Look", "Manicure Set"]),
    _t("beauty", "deodorant", "Deodorant",
       ["a deodorant", "an underarm deodorant", "some antiperspirant alternative"],
       f"{_BEAUTY} › Personal Care › Deodorants & Antiperspirants › Deodorant",
       ["aluminum free", "natural ingredients", "sensitive skin", "long lasting",
        "baking soda free", "travel size"],
       [("scent", ["lavender", "citrus", "unscented", "cedarwood", "coconut"]),
        ("size", ["2.65 oz", "pack of 2", "pack of 3"])],
       (5, 28), ["for Women and Men", "48 Hour Odor Protection", "Stick"]),
    _t("electronics", "wireless earbuds", "Wireless Earbuds",
       ["wireless earbuds", "a pair of cordless earphones", "bluetooth in-ear headphones"],
       f"{_ELEC} › Headphones, Earbuds & Accessories › Headphones & Earbuds › Earbud Headphones",
       ["noise cancelling", "water resistant", "long battery life", "fast charging",
        "hands free", "charging case"],
       [("color", ["black", "white", "navy blue", "rose gold", "charcoal"])],
       (18, 160), ["with Microphone", "Stereo Sound", "for Sports and Workout"]),
    _t("electronics", "phone case", "Phone Case",
       ["a phone case", "a protective phone cover", "a smartphone shell"],
       f"{_ELEC} › Cell Phones & Accessories › Cases, Holsters & Sleeves › Basic Cases",
       ["shock absorbing", "wireless charging", "slim fit", "raised edges", "scratch resistant",
        "easy install"],
       [("color", ["black", "clear", "navy blue", "olive green", "burgundy", "lavender"]),
        ("size", ["iphone 13", "iphone 14", "iphone 15", "galaxy s23", "pixel 8"])],
       (7, 35), ["Protective Cover", "Drop Protection", "Shockproof Bumper"]),
    _t("electronics", "usb c cable", "USB C Cable",
       ["a usb c cable", "a type-c charging cord", "a cord for charging my phone"],
       f"{_ELEC} › Computers & Accessories › Computer Accessories & Peripherals › Cables",
       ["fast charging", "braided nylon", "high speed", "data transfer", "durable design"],
       [("size", ["3 ft", "6 ft", "10 ft", "pack of 3"]),
        ("color", ["black", "white", "red", "charcoal"])],
       (6, 25), ["Charger Cord", "for Samsung Galaxy and iPad", "Charging Cable"]),
    _t("electronics", "portable charger", "Portable Charger",
       ["a portable charger", "a power bank", "a battery pack to charge my phone on the go"],
       f"{_ELEC} › Cell Phones & Accessories › Chargers & Power Adapters › Portable Power Banks",
       ["fast charging", "high capacity", "led display", "usb c", "compact design"],
       [("color", ["black", "white", "navy blue", "pink"])],
       (15, 70), ["Power Bank", "Battery Pack", "External Battery"]),
    _t("electronics", "bluetooth speaker", "Bluetooth Speaker",
       ["a bluetooth speaker", "a wireless speaker", "a portable music speaker"],
       f"{_ELEC} › Portable Audio & Video › Portable Speakers & Docks › Portable Bluetooth Speakers",
       ["water resistant", "long battery life", "stereo sound", "hands free", "deep bass"],
       [("color", ["black", "red", "teal", "light grey", "olive green"])],
       (20, 150), ["Outdoor Speaker", "with Loud Sound", "for Home and Travel"]),
    _t("fashion", "men's t-shirt", "Men's T-Shirt",
       ["a men's t-shirt", "a tee for men", "a short sleeved top for a man"],
       f"{_FASHION} › Men › Clothing › Shirts › T-Shirts",
       ["machine wash", "cotton material", "short sleeve", "classic fit", "moisture wicking",
        "relaxed fit"],
       [("color", ["black", "white", "navy blue", "light grey", "olive green", "burgundy"]),
        ("size", APPAREL_SIZES)],
       (9, 35), ["Crew Neck", "Casual Tee", "Everyday Shirt"]),
    _t("fashion", "women's running shoes", "Women's Running Shoes",
       ["women's running shoes", "jogging sneakers for women", "ladies' trainers for running"],
       f"{_FASHION} › Women › Shoes › Athletic › Running",
       ["non slip", "rubber sole", "breathable mesh", "arch support", "memory foam",
        "lightweight design"],
       [("color", ["black", "white", "pink", "navy blue", "light grey", "teal"]),
        ("size", SHOE_SIZES)],
       (30, 120), ["Athletic Sneakers", "Road Running", "Walking Shoes"]),
    _t("fashion", "yoga leggings", "Yoga Leggings",
       ["yoga leggings", "workout tights", "stretchy gym pants"],
       f"{_FASHION} › Women › Clothing › Active › Leggings",
       ["high waist", "tummy control", "moisture wicking", "four way stretch", "squat proof",
        "machine wash"],
       [("color", ["black", "navy blue", "charcoal", "burgundy", "olive green", "lavender"]),
        ("size", APPAREL_SIZES)],
       (15, 45), ["for Women", "Workout Pants", "Athletic Tights"]),
    _t("fashion", "hooded jacket", "Hooded Jacket",
       ["a hooded jacket", "a coat with a hood", "a hoodie jacket for cold weather"],
       f"{_FASHION} › Men › Clothing › Jackets & Coats › Lightweight Jackets",
       ["water resistant", "fleece lined", "windproof", "zipper pockets", "removable hood",
        "machine wash"],
       [("color", ["black", "navy blue", "khaki", "olive green", "charcoal"]),
        ("size", APPAREL_SIZES)],
       (35, 140), ["Winter Coat", "Outdoor Outerwear", "Full Zip"]),
    _t("fashion", "crew socks", "Crew Socks",
       ["crew socks", "a pack of socks", "mid-calf socks"],
       f"{_FASHION} › Men › Clothing › Socks › Athletic Socks",
       ["cushioned sole", "moisture wicking", "arch support", "cotton blend", "reinforced heel"],
       [("color", ["black", "white", "light grey", "multicolor"]),
        ("size", ["pack of 6", "pack of 10", "pack of 12"])],
       (9, 30), ["Athletic Socks", "for Men and Women", "Everyday Socks"]),
    _t("food", "protein bar", "Protein Bar",
       ["a protein bar", "a high protein snack bar", "some workout snack bars"],
       f"{_FOOD} › Snack Foods › Bars › Protein Bars",
       ["gluten free", "high protein", "low sugar", "non gmo", "keto friendly", "plant based"],
       [("flavor name", ["chocolate peanut butter", "cookie dough", "sea salt caramel",
                         "birthday cake", "blueberry crumble"]),
        ("size", ["pack of 4", "pack of 12", "pack of 24"])],
       (12, 45), ["Healthy Snack", "Meal Replacement", "On the Go Snack"]),
    _t("food", "ground coffee", "Ground Coffee",
       ["ground coffee", "a bag of coffee grounds", "a coffee for my drip machine"],
       f"{_FOOD} › Beverages › Coffee, Tea & Cocoa › Coffee › Ground Coffee",
       ["fair trade", "single origin", "low acid", "medium roast", "usda organic",
        "kosher certified"],
       [("flavor name", ["original", "french vanilla", "hazelnut", "mocha", "cinnamon"]),
        ("size", ["12 ounce", "24 ounce", "2 pound"])],
       (8, 40), ["Arabica Blend", "Breakfast Blend", "Rich Flavor"]),
    _t("food", "herbal tea", "Herbal Tea",
       ["herbal tea", "an herbal infusion", "a box of tea bags without caffeine"],
       f"{_FOOD} › Beverages › Coffee, Tea & Cocoa › Tea › Herbal",
       ["caffeine free", "usda organic", "non gmo", "individually wrapped", "natural flavors",
        "sugar free"],
       [("flavor name", ["peppermint", "chamomile", "lemon ginger", "hibiscus", "rooibos"]),
        ("size", ["20 count", "50 count", "100 count"])],
       (5, 25), ["Tea Bags", "Caffeine Free Blend", "Relaxing Tea"]),
    _t("food", "mixed nuts", "Mixed Nuts",
       ["mixed nuts", "a nut mix", "a bag of assorted nuts"],
       f"{_FOOD} › Snack Foods › Nuts & Seeds › Mixed Nuts",
       ["low sodium", "gluten free", "high protein", "resealable bag", "non gmo",
        "kosher certified"],
       [("size", ["1 pound", "2 pound", "pack of 6"])],
       (9, 35), ["Roasted and Salted", "Snack Pack", "Deluxe Mix"]),
    _t("food", "olive oil", "Olive Oil",
       ["olive oil", "a bottle of cooking oil from olives", "oil for salads and cooking"],
       f"{_FOOD} › Pantry Staples › Cooking & Baking › Oils, Vinegars & Salad Dressings › Oils",
       ["extra virgin", "cold pressed", "usda organic", "non gmo", "glass bottle"],
       [("size", ["500 ml", "750 ml", "1 liter", "3 liter"])],
       (8, 45), ["Imported", "First Cold Press", "for Cooking"]),
    _t("furniture", "office chair", "Office Chair",
       ["an office chair", "a desk chair", "a computer seat for work"],
       f"{_HOME} › Furniture › Home Office Furniture › Home Office Chairs › Desk Chairs",
       ["lumbar support", "height adjustable", "easy assembly", "breathable mesh",
        "swivel base", "padded armrests"],
       [("color", ["black", "white", "light grey", "navy blue", "burgundy"])],
       (60, 320), ["Ergonomic Desk Chair", "Computer Chair", "Task Chair"]),
    _t("furniture", "bookshelf", "Bookshelf",
       ["a bookshelf", "a bookcase", "a shelving unit for books"],
       f"{_HOME} › Furniture › Living Room Furniture › Bookcases",
       ["easy assembly", "solid wood", "storage space", "space saving", "engineered wood"],
       [("color", ["white", "black", "espresso", "walnut", "natural oak"]),
        ("size", ["3 tier", "4 tier", "5 tier"])],
       (40, 260), ["Storage Shelf", "Display Rack", "for Living Room"]),
    _t("furniture", "bed sheets", "Bed Sheet Set",
       ["bed sheets", "a sheet set", "bedding sheets for my bed"],
       f"{_HOME} › Bedding › Sheets & Pillowcases › Sheet & Pillowcase Sets",
       ["deep pocket", "machine wash", "wrinkle free", "soft microfiber", "breathable cotton",
        "fade resistant"],
       [("color", ["white", "light grey", "navy blue", "beige", "lavender", "charcoal"]),
        ("size", BED_SIZES)],
       (20, 90), ["4 Piece Set", "Hotel Luxury", "with Pillowcases"]),
    _t("furniture", "table lamp", "Table Lamp",
       ["a table lamp", "a bedside lamp", "a desk light for my nightstand"],
       f"{_HOME} › Lighting & Ceiling Fans › Lamps & Shades › Table Lamps",
       ["usb port", "touch control", "dimmable light", "energy efficient", "living room",
        "bedroom lighting"],
       [("color", ["black", "white", "beige", "teal", "light grey"])],
       (15, 90), ["Nightstand Lamp", "Modern Lamp", "Reading Light"]),
    _t("furniture", "throw pillow covers", "Throw Pillow Covers",
       ["throw pillow covers", "cushion covers", "cases for my sofa pillows"],
       f"{_HOME} › Home Décor Products › Decorative Pillows, Inserts & Covers › Throw Pillow Covers",
       ["living room", "hidden zipper", "machine wash", "double sided", "soft velvet"],
       [("color", ["mustard yellow", "navy blue", "beige", "teal", "burgundy", "olive green"]),
        ("size", ["16x16 inch", "18x18 inch", "20x20 inch"])],
       (9, 35), ["Set of 2", "Decorative Cushion Cases", "for Couch"]),
)

#: attribute -> predicate phrases for instructions. The first repeats the attribute's words
#: (as upstream's human instructions mostly do); the rest say the same in other words.
ATTRIBUTE_PHRASES: dict[str, tuple[str, ...]] = {
    "sulfate free": ("is sulfate free", "has no sulfates", "is made without harsh detergents"),
    "paraben free": ("is paraben free", "contains no parabens"),
    "natural ingredients": ("is made with natural ingredients", "uses a plant based formula"),
    "dry hair": ("is good for dry hair", "helps with my brittle, thirsty hair"),
    "cruelty free": ("is cruelty free", "is not tested on animals"),
    "hair growth": ("promotes hair growth", "helps my hair grow thicker"),
    "color safe": ("is color safe", "won't strip my hair dye"),
    "dry skin": ("is for dry skin", "soothes my flaky skin"),
    "fragrance free": ("is fragrance free", "has no added perfume"),
    "hyaluronic acid": ("has hyaluronic acid", "contains hyaluronic acid for hydration"),
    "anti aging": ("is anti aging", "reduces fine lines and wrinkles"),
    "non greasy": ("is non greasy", "doesn't leave an oily film"),
    "sensitive skin": ("works for sensitive skin", "is gentle on easily irritated skin"),
    "long lasting": ("is long lasting", "stays on all day"),
    "highly pigmented": ("is highly pigmented", "has rich, bold color payoff"),
    "matte finish": ("has a matte finish", "isn't shiny"),
    "moisturizing formula": ("has a moisturizing formula", "keeps my lips from drying out"),
    "quick drying": ("is quick drying", "dries in a minute or two"),
    "non toxic": ("is non toxic", "is free of harmful chemicals"),
    "high gloss": ("has a high gloss", "gives a glassy shine"),
    "chip resistant": ("is chip resistant", "doesn't flake off after a few days"),
    "vegan": ("is vegan", "has no animal derived ingredients"),
    "aluminum free": ("is aluminum free", "has no aluminum"),
    "baking soda free": ("is baking soda free", "contains no bicarbonate"),
    "travel size": ("comes in travel size", "is small enough for my carry-on"),
    "noise cancelling": ("is noise cancelling", "blocks outside sound"),
    "water resistant": ("is water resistant", "can handle rain and splashes"),
    "long battery life": ("has a long battery life", "runs for many hours on one charge"),
    "fast charging": ("supports fast charging", "charges up quickly"),
    "hands free": ("is hands free", "lets me take calls without holding anything"),
    "charging case": ("comes with a charging case", "has a case that recharges it"),
    "shock absorbing": ("is shock absorbing", "survives drops"),
    "wireless charging": ("supports wireless charging", "works with a charging pad"),
    "slim fit": ("has a slim fit", "is thin and fitted"),
    "raised edges": ("has raised edges", "has a lip that protects the screen and camera"),
    "scratch resistant": ("is scratch resistant", "won't get scuffed easily"),
    "easy install": ("is easy to install", "snaps on without tools"),
    "braided nylon": ("is braided nylon", "has a woven fabric jacket"),
    "high speed": ("is high speed", "transfers quickly"),
    "data transfer": ("supports data transfer", "can sync files too"),
    "durable design": ("has a durable design", "is built to last"),
    "high capacity": ("has a high capacity", "holds several full phone charges"),
    "led display": ("has an led display", "shows the remaining battery on a screen"),
    "usb c": ("has usb c", "has a type-c port"),
    "compact design": ("has a compact design", "fits in my pocket"),
    "stereo sound": ("has stereo sound", "plays in stereo"),
    "deep bass": ("has deep bass", "has a strong low end"),
    "machine wash": ("is machine washable", "can go in the washing machine"),
    "cotton material": ("is made of cotton material", "is all cotton"),
    "short sleeve": ("is short sleeve", "has short sleeves"),
    "classic fit": ("has a classic fit", "has a regular, not slim, cut"),
    "moisture wicking": ("is moisture wicking", "keeps sweat away"),
    "relaxed fit": ("has a relaxed fit", "is loose and comfy"),
    "non slip": ("is non slip", "has good grip on wet floors"),
    "rubber sole": ("has a rubber sole", "has a rubber outsole"),
    "breathable mesh": ("has breathable mesh", "lets air through"),
    "arch support": ("has arch support", "supports my flat feet"),
    "memory foam": ("has memory foam", "has a cushioned insole that molds to my foot"),
    "lightweight design": ("has a lightweight design", "doesn't weigh much"),
    "high waist": ("is high waist", "sits above the belly button"),
    "tummy control": ("has tummy control", "smooths my midsection"),
    "four way stretch": ("has four way stretch", "stretches in every direction"),
    "squat proof": ("is squat proof", "doesn't go see-through when I bend"),
    "fleece lined": ("is fleece lined", "is warm and fuzzy inside"),
    "windproof": ("is windproof", "keeps the wind out"),
    "zipper pockets": ("has zipper pockets", "has pockets that zip shut"),
    "removable hood": ("has a removable hood", "has a hood I can take off"),
    "cushioned sole": ("has a cushioned sole", "is padded under the foot"),
    "cotton blend": ("is a cotton blend", "is mostly cotton"),
    "reinforced heel": ("has a reinforced heel", "won't wear through at the heel"),
    "gluten free": ("is gluten free", "is safe for celiacs"),
    "high protein": ("is high protein", "is packed with protein"),
    "low sugar": ("is low sugar", "isn't too sweet"),
    "non gmo": ("is non gmo", "has no genetically modified ingredients"),
    "keto friendly": ("is keto friendly", "fits a low carb diet"),
    "plant based": ("is plant based", "has no dairy or whey"),
    "fair trade": ("is fair trade", "pays the farmers fairly"),
    "single origin": ("is single origin", "comes from one farm region"),
    "low acid": ("is low acid", "is easy on my stomach"),
    "medium roast": ("is a medium roast", "is neither light nor dark roasted"),
    "usda organic": ("is usda organic", "is certified organic"),
    "kosher certified": ("is kosher certified", "is kosher"),
    "caffeine free": ("is caffeine free", "won't keep me up at night"),
    "individually wrapped": ("is individually wrapped", "has each bag sealed separately"),
    "natural flavors": ("has natural flavors", "has no artificial flavoring"),
    "sugar free": ("is sugar free", "has no added sugar"),
    "low sodium": ("is low sodium", "isn't very salty"),
    "resealable bag": ("comes in a resealable bag", "has a zip-top bag"),
    "extra virgin": ("is extra virgin", "is the highest grade"),
    "cold pressed": ("is cold pressed", "is pressed without heat"),
    "glass bottle": ("comes in a glass bottle", "isn't in plastic"),
    "lumbar support": ("has lumbar support", "supports my lower back"),
    "height adjustable": ("is height adjustable", "can be raised and lowered"),
    "easy assembly": ("is easy to assemble", "goes together in minutes"),
    "swivel base": ("has a swivel base", "turns all the way around"),
    "padded armrests": ("has padded armrests", "has soft arms"),
    "solid wood": ("is made of solid wood", "is real timber, not particle board"),
    "storage space": ("has plenty of storage space", "holds lots of things"),
    "space saving": ("is space saving", "fits in a small apartment"),
    "engineered wood": ("is made of engineered wood", "is a wood composite"),
    "deep pocket": ("has deep pockets", "fits my thick mattress"),
    "wrinkle free": ("is wrinkle free", "doesn't crease"),
    "soft microfiber": ("is soft microfiber", "is a silky synthetic fabric"),
    "breathable cotton": ("is breathable cotton", "sleeps cool"),
    "fade resistant": ("is fade resistant", "keeps its color after washing"),
    "usb port": ("has a usb port", "can charge my phone"),
    "touch control": ("has touch control", "turns on with a tap"),
    "dimmable light": ("has a dimmable light", "can be turned down low"),
    "energy efficient": ("is energy efficient", "saves electricity"),
    "living room": ("is for the living room", "suits my lounge"),
    "bedroom lighting": ("is meant for bedroom lighting", "gives a cozy glow by the bed"),
    "hidden zipper": ("has a hidden zipper", "has a concealed closure"),
    "double sided": ("is double sided", "has the same design on both faces"),
    "soft velvet": ("is soft velvet", "feels plush"),
}
# fmt: on

#: Instruction openings (upstream's human instructions are lower case and start like these).
OPENINGS = (
    "i am looking for",
    "i need",
    "i want to buy",
    "find me",
    "i'd like",
    "can you help me find",
    "please get me",
    "i'm shopping for",
)

#: How an instruction asks for an option value, by option name ({v} is the value).
OPTION_PHRASES: dict[str, tuple[str, ...]] = {
    "color": ("in {v}", "in the color {v}", "in {v} color"),
    "size": ("in size {v}", "size {v}", "in {v}"),
    "scent": ("with a {v} scent", "in {v} scent"),
    "flavor name": ("in {v} flavor", "with {v} flavor"),
}

#: Syllables of invented brand names (never real brands).
BRAND_SYLLABLES = (
    "lu", "mo", "ra", "vel", "zen", "ka", "tri", "no", "sa", "bel", "qui", "fe", "dor", "mi",
    "xo", "ta", "ri", "ven", "so", "la", "pax", "or", "ny", "cor", "el", "ba", "vo", "sun",
)  # fmt: skip

#: Sentences that pad descriptions ({noun} is the product noun, lower case).
FILLER = (
    "Our {noun} is designed for everyday use and backed by friendly customer support.",
    "Every {noun} is inspected before it ships.",
    "Thousands of customers choose this {noun} for its quality and value.",
    "The {noun} makes a thoughtful gift for friends and family.",
    "We stand behind this {noun} with a 30 day satisfaction guarantee.",
    "Simple to use, this {noun} fits right into your routine.",
)

REVIEW_TITLES = (
    ("Exactly what I wanted", 5),
    ("Great value", 5),
    ("Works as described", 4),
    ("Pretty good", 4),
    ("It's okay", 3),
    ("Not for me", 2),
    ("Disappointed", 1),
)
