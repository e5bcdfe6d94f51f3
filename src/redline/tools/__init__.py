"""What a model is shown: tool schemas, the Lark grammar, tool selection."""
