"""Name and place lists for synthetic patients and clinicians (common given names and surnames; the
towns and street names are generic). Nothing here describes a real person."""

MALE_GIVEN = [
    "James", "John", "Robert", "Michael", "William", "David", "Richard", "Joseph", "Thomas", "Charles",
    "Christopher", "Daniel", "Matthew", "Anthony", "Mark", "Donald", "Steven", "Paul", "Andrew", "Joshua",
    "Kenneth", "Kevin", "Brian", "George", "Timothy", "Ronald", "Edward", "Jason", "Jeffrey", "Ryan",
    "Jacob", "Gary", "Nicholas", "Eric", "Jonathan", "Stephen", "Larry", "Justin", "Scott", "Brandon",
    "Benjamin", "Samuel", "Gregory", "Alexander", "Frank", "Patrick", "Raymond", "Jack", "Dennis", "Jerry",
    "Tyler", "Aaron", "Jose", "Adam", "Nathan", "Henry", "Douglas", "Zachary", "Peter", "Kyle",
    "Luis", "Carlos", "Miguel", "Wei", "Hiroshi", "Arjun", "Omar", "Ahmed", "Dmitri", "Kwame",
]
FEMALE_GIVEN = [
    "Mary", "Patricia", "Jennifer", "Linda", "Elizabeth", "Barbara", "Susan", "Jessica", "Sarah", "Karen",
    "Lisa", "Nancy", "Betty", "Margaret", "Sandra", "Ashley", "Kimberly", "Emily", "Donna", "Michelle",
    "Carol", "Amanda", "Dorothy", "Melissa", "Deborah", "Stephanie", "Rebecca", "Sharon", "Laura", "Cynthia",
    "Kathleen", "Amy", "Angela", "Shirley", "Anna", "Brenda", "Pamela", "Emma", "Nicole", "Helen",
    "Samantha", "Katherine", "Christine", "Debra", "Rachel", "Carolyn", "Janet", "Catherine", "Maria", "Heather",
    "Diane", "Ruth", "Julie", "Olivia", "Joyce", "Virginia", "Victoria", "Kelly", "Lauren", "Christina",
    "Sofia", "Lucia", "Mei", "Yuki", "Priya", "Fatima", "Aisha", "Olga", "Amara", "Ingrid",
]
FAMILY = [
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
    "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin",
    "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson",
    "Walker", "Young", "Allen", "King", "Wright", "Scott", "Torres", "Nguyen", "Hill", "Flores",
    "Green", "Adams", "Nelson", "Baker", "Hall", "Rivera", "Campbell", "Mitchell", "Carter", "Roberts",
    "Gomez", "Phillips", "Evans", "Turner", "Diaz", "Parker", "Cruz", "Edwards", "Collins", "Reyes",
    "Stewart", "Morris", "Morales", "Murphy", "Cook", "Rogers", "Gutierrez", "Ortiz", "Morgan", "Cooper",
    "Peterson", "Bailey", "Reed", "Kelly", "Howard", "Ramos", "Kim", "Cox", "Ward", "Richardson",
    "Watson", "Brooks", "Chavez", "Wood", "James", "Bennett", "Gray", "Mendoza", "Ruiz", "Hughes",
    "Price", "Alvarez", "Castillo", "Sanders", "Patel", "Myers", "Long", "Ross", "Foster", "Jimenez",
    "Chen", "Wang", "Tanaka", "Singh", "Khan", "Ivanov", "Okafor", "Larsen", "Schmidt", "Rossi",
]
STREETS = [
    "Maple", "Oak", "Cedar", "Pine", "Elm", "Birch", "Walnut", "Chestnut", "Willow", "Spruce",
    "Lake", "Hill", "River", "Park", "Meadow", "Forest", "Sunset", "Highland", "Valley", "Church",
]
STREET_KINDS = ["Street", "Avenue", "Road", "Lane", "Drive", "Court", "Way"]
TOWNS = [  # (town, state, ZIP prefix)
    ("Riverton", "MA", "017"), ("Fairview", "MA", "018"), ("Oakdale", "MA", "019"), ("Lakeside", "MA", "020"),
    ("Millbrook", "MA", "021"), ("Brookfield", "MA", "015"), ("Westford", "MA", "014"), ("Ashby", "MA", "013"),
    ("Granville", "MA", "010"), ("Northfield", "MA", "011"),
]
