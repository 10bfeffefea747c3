"""Built-in patch providers: one module per target library (see mindspeed_ms.adaptation.providers)."""
