"""Two odd but legal games the holdem tests and scripts/fuzz_parsers.py share: a board card in
round 1 (written straight after seat 1's hand), a round without board cards, unequal blinds and
stacks, a 3-suit deck; limit and no-limit."""

ODD_LIMIT = """GAMEDEF
limit
numPlayers = 2
numRounds = 3
blind = 2 1
raiseSize = 2 2 4
firstPlayer = 2 1 2
maxRaises = 2 3 1
numSuits = 3
numRanks = 5
numHoleCards = 1
numBoardCards = 1 0 2
END GAMEDEF
"""
ODD_NOLIMIT = ODD_LIMIT.replace("limit\n", "nolimit\nstack = 60 45\n", 1).replace("raiseSize = 2 2 4\n", "")
