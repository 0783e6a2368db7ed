"""ALFWorld household tasks on TextWorld's PDDL engine (``AgentR1/ALFWorld-v0``).

Modules: :mod:`.env` (the Gymnasium class), :mod:`.engine` (TextWorld's ``PddlEnv`` with
ALFWorld's names), :mod:`.scenes` / :mod:`.generator` / :mod:`.problem` (the seeded game
generator), :mod:`.games` (the generated game set and its cache), :mod:`.official` (loader of
the official ``json_2.1.1`` games), :mod:`.speedup` (byte-identical memoisation of TextWorld's
grammar parsing), :mod:`.prompts` (the default chat prompt).
"""
