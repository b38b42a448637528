// Filled in by the export issue.
