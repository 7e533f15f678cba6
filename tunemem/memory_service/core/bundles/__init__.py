"""Export and import of a tenant's memory as a bundle, and the validation of bundle records."""
