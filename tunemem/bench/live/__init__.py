"""`tunemem bench live`: the agent on a GPU with a served memory, arm against arm."""
