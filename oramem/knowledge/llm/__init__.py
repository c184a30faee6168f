"""The LLM boundary: providers, task prompts, reply models and emotion tagging."""
