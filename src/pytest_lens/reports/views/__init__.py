"""Ways to read a run artifact: transcripts, the worst questions, selecting questions."""
