"""PPO-family learners for LLM agents."""
