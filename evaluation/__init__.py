"""Measuring strategies: duplicate matches (:mod:`evaluation.match`), players and the player SPEC
parser (:mod:`evaluation.players`), the blueprint + solving player (:mod:`evaluation.solving`),
local best response (:mod:`evaluation.lbr`) and OpenSpiel as an exploitability oracle
(:mod:`evaluation.oracle`). Exact best response lives with the trainer that uses it
(:mod:`blueprint.evaluate`)."""
