"""LLM-facing Gymnasium wrappers (imported as ``agent_gym.wrappers``).

The envs stay LLM-agnostic; these wrappers add what a language-model policy needs. The usual
stack, innermost first::

    env = gym.make("AgentR1/WebShop-v0")                 # TimeLimit(...) around the env
    env = ParseAction(env, format="tool_call")           # LLM text -> env command
    env = ShapeReward(env, reward_scale=0.0, success_bonus=10.0, invalid_penalty=0.1)
    env = ChatPrompt(env, history_length=2)              # observation -> chat messages
    env = RecordEpisodes(env, "runs/episodes.jsonl")     # optional: episodes to JSONL
"""

from agent_gym.wrappers.action_formats import ActionParseError, parse_command
from agent_gym.wrappers.chat_prompt import ChatPrompt
from agent_gym.wrappers.parse_action import ParseAction
from agent_gym.wrappers.recording import RecordEpisodes
from agent_gym.wrappers.shaping import ShapeReward

__all__ = [
    "ActionParseError",
    "ChatPrompt",
    "ParseAction",
    "RecordEpisodes",
    "ShapeReward",
    "parse_command",
]
