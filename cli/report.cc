// Placeholder until the report lands.
