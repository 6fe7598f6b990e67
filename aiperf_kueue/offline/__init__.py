"""The offline plan: run the real program under Pulumi's mock engine, record everything."""
