"""Golden questions, reference spans and their metrics: what the quality gate scores a
tenant's versions with, and what ``tessera eval chunking`` reports."""
