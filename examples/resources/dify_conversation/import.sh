# A conversation of a given end user: USER/CONVERSATION_ID.
terraform import dify_conversation.trip alice/0b2e9c1a-5d3f-4e61-9a55-0c7e2f3b8d11

# A bare conversation id uses the provider's default user (DIFY_USER, else "terraform").
terraform import dify_conversation.trip 0b2e9c1a-5d3f-4e61-9a55-0c7e2f3b8d11

# The query, inputs, uploaded files, answer, agent thoughts and token counts are
# read from the first message in the history, so a configuration that matches
# plans with no changes. auto_generate_name and the per-unit prices in usage
# cannot be read back: the first apply after the import records
# auto_generate_name from the configuration without calling Dify.
