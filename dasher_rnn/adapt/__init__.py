"""Online adaptation: dynamic evaluation on committed text with checkpoints, rollback and an explosion guard."""
