"""Small text envs for tests, built from injected functions (like Gymnasium's GenericTestEnv).

Import it as ``from testing_env import ...``: pytest puts ``tests/`` on ``sys.path`` because
``tests/conftest.py`` lives there (the default ``prepend`` import mode).

* :class:`GenericTextEnv` runs whatever ``reset_func``/``step_func`` it is given and fills in
  every :data:`agent_gym.core.INFO_KEYS` entry that the functions leave out.
* :class:`CountingEnv` is a tiny complete task with a known optimal play: the seed picks a
  target in 1..5; ``add 1``/``add 2`` move a counter, ``submit`` ends the episode (reward 1 and
  ``won`` when the counter equals the target). Anything else is an invalid action.
* :func:`counting_spec` returns an :class:`~gymnasium.envs.registration.EnvSpec` for it (with a
  step limit), so ``gym.make``/``agent_gym.make_vec`` can build it without registering an id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gymnasium.envs.registration import EnvSpec

from agent_gym.core import INFO_KEYS, PromptTemplates, TextEnv, ToolSpec

ResetFunc = Callable[["GenericTextEnv", int | None, dict | None], tuple[str, dict]]
StepFunc = Callable[["GenericTextEnv", str], tuple[str, float, bool, bool, dict]]


def _default_info(env: TextEnv) -> dict[str, Any]:
    return {
        "task": "test task",
        "task_id": "test-0",
        "anchor_obs": env._last_obs,
        "admissible_actions": [],
        "won": False,
        "score": 0.0,
        "data_source": "generated:test",
    }


def _default_reset(env: GenericTextEnv, seed: int | None, options: dict | None) -> tuple[str, dict]:
    return "start", {}


def _default_step(env: GenericTextEnv, action: str) -> tuple[str, float, bool, bool, dict]:
    return f"you said {action}", 0.0, False, False, {"is_action_valid": True}


class GenericTextEnv(TextEnv):
    """A :class:`TextEnv` whose ``reset``/``step`` are injected functions.

    Missing info keys are filled with defaults (``is_action_valid`` defaults to True after a
    step), so a test only spells out what it checks.

    Example:
        >>> env = GenericTextEnv(step_func=lambda env, a: (a.upper(), 1.0, True, False, {}))
        >>> env.reset(seed=0)[0], env.step("hi")[:3]
        ('start', ('HI', 1.0, True))
    """

    def __init__(
        self,
        reset_func: ResetFunc = _default_reset,
        step_func: StepFunc = _default_step,
        *,
        tools: tuple[ToolSpec, ...] | None = None,
        prompt_templates: PromptTemplates | None = None,
        max_parallel_calls: int | None = None,
        **kwargs: Any,
    ) -> None:
        """Set up the env.

        Args:
            reset_func: ``(env, seed, options) -> (obs, info)``.
            step_func: ``(env, action) -> (obs, reward, terminated, truncated, info)``.
            tools: Overrides the class's tool-call tools.
            prompt_templates: Overrides the class's prompt templates.
            max_parallel_calls: Overrides the class's commands-per-step limit.
            **kwargs: Passed to :class:`TextEnv` (``render_mode``, space lengths).
        """
        super().__init__(**kwargs)
        self.reset_func = reset_func
        self.step_func = step_func
        if tools is not None:
            self.tools = tools
        if prompt_templates is not None:
            self.prompt_templates = prompt_templates
        if max_parallel_calls is not None:
            self.max_parallel_calls = max_parallel_calls
        self.num_steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        self.num_steps = 0
        obs, info = self.reset_func(self, seed, options)
        self._last_obs = obs
        return obs, {**_default_info(self), **info}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        self._check_action(action)
        self.num_steps += 1
        obs, reward, terminated, truncated, info = self.step_func(self, action)
        self._last_obs = obs
        info = {**_default_info(self), "is_action_valid": True, **info}
        return obs, reward, terminated, truncated, info


class CountingEnv(TextEnv):
    """Count from 0 to a seed-chosen target with ``add 1``/``add 2``, then ``submit``.

    Reward 1.0 and ``won`` when ``submit`` is sent with the counter on the target, else 0.0;
    ``submit`` always terminates. Unknown text is an invalid action (state unchanged).
    Several commands, one per line, are allowed (``max_parallel_calls = 3``) and applied in
    order; any unknown line makes the whole action invalid.

    Args:
        fail_at_step: Raise :class:`RuntimeError` on this step (1-based), to test error paths.
        targets: The task list; the seed picks one (default 1..5).
    """

    tools = (
        ToolSpec("add", "Add a number to the counter.", {"amount": "1 or 2"}, "add {amount}"),
        ToolSpec("submit", "Submit the counter as the answer.", {}, "submit"),
    )
    max_parallel_calls = 3

    def __init__(
        self, *, fail_at_step: int | None = None, targets: tuple[int, ...] = (1, 2, 3, 4, 5), **kw
    ) -> None:
        super().__init__(**kw)
        self.fail_at_step = fail_at_step
        self.targets = targets
        self.target = 0
        self.counter = 0
        self.num_steps = 0
        self.won = False

    def _info(self) -> dict[str, Any]:
        return {
            "task": f"Make the counter equal {self.target}, then submit.",
            "task_id": f"count-to-{self.target}",
            "anchor_obs": f"counter={self.counter}",
            "admissible_actions": ["add 1", "add 2", "submit"],
            "won": self.won,
            "score": float(self.won),
            "data_source": "generated:test-counting",
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        if options and "task_id" in options:
            self.target = int(str(options["task_id"]).rsplit("-", 1)[-1])
        else:
            self.target = int(self.targets[int(self.np_random.integers(len(self.targets)))])
        self.counter, self.num_steps, self.won = 0, 0, False
        self._last_obs = f"The counter is {self.counter}."
        return self._last_obs, self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        self._check_action(action)
        self.num_steps += 1
        if self.fail_at_step is not None and self.num_steps == self.fail_at_step:
            raise RuntimeError(f"CountingEnv: injected failure at step {self.num_steps}")
        commands = [line.strip() for line in action.splitlines() if line.strip()]
        if not commands or any(c not in ("add 1", "add 2", "submit") for c in commands):
            self._last_obs = f"Unknown command {action!r:.60}. The counter is {self.counter}."
            return self._last_obs, 0.0, False, False, {**self._info(), "is_action_valid": False}
        terminated = False
        for command in commands:
            if command == "submit":
                self.won = self.counter == self.target
                terminated = True
                break
            self.counter += int(command[-1])
        self._last_obs = f"The counter is {self.counter}."
        reward = 1.0 if self.won else 0.0
        return self._last_obs, reward, terminated, False, {**self._info(), "is_action_valid": True}


def counting_spec(max_episode_steps: int | None = 6, **kwargs: Any) -> EnvSpec:
    """An unregistered spec for :class:`CountingEnv` (``kwargs`` go to the constructor)."""
    return EnvSpec(
        id="AgentGymTest/Counting-v0",
        entry_point=CountingEnv,
        max_episode_steps=max_episode_steps,
        kwargs=kwargs,
    )


def assert_info_contract(info: dict, *, after_step: bool = True) -> None:
    """Check that ``info`` has every :data:`INFO_KEYS` entry with its type."""
    for key, typ in INFO_KEYS.items():
        if not after_step and key == "is_action_valid":
            continue
        assert key in info, f"info lacks {key!r}"
        assert isinstance(info[key], typ), f"info[{key!r}] is {type(info[key]).__name__}"
