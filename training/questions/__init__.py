"""Written training questions (training/data/questions): the corpus they come from, batch preparation, checks."""
