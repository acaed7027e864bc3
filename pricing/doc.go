// Package pricing prices model requests: a table of US dollar prices per
// million tokens (input, output, cache read, cache write, reasoning) per
// model, and the arithmetic that turns a harness.Usage into a [Cost]
// without counting a token twice.
//
// The tracing extension uses it to put harnessx.cost.usd and its parts on
// chat and agent spans, and harness.WithPricing(table.USD) puts a run's
// total on harness.RunResult.Cost. It is a public package, not internal,
// because users must be able to read, extend and replace the table: a
// model of their own, a negotiated price, a date the built-in table does
// not know yet.
//
// # The built-in table
//
// [Default] is an embedded, dated JSON file (prices.json, see
// [Table.AsOf]) with the current Anthropic and OpenAI models at their
// standard API prices: not the Batch API, priority tiers or regional
// surcharges. Anthropic's cache write is its 5-minute write (a 1-hour
// write costs more; harness.Usage does not tell them apart). Both vendors
// bill reasoning tokens as output tokens. Models whose price changes with
// the prompt's length (Claude Haiku 5.5 above 100,000 tokens, Claude
// Sonnet 4.5 above 200,000, GPT-5.4 and GPT-5.5 above 270,000) carry a
// long_context tier. Prices change: check the date, and override.
//
// Names match exactly — the model name and the aliases the file lists
// (dated snapshots such as claude-sonnet-4-5-20250929 or
// gpt-4o-2024-08-06) — never by prefix, so "gpt-4o-2024-05-13" (an older
// snapshot at another price) has no price rather than gpt-4o's. A model
// without a price gets no cost at all.
//
// # Overriding and turning it off
//
//   - by option: tracing.WithPricing(t) with any Table ([Parse], [Load],
//     or [Table.Merge] to add to the built-in one); tracing.WithPricing(nil)
//     turns costs off;
//   - by environment: HARNESSX_PRICES=/path/prices.json adds the file's
//     models to the built-in table, replacing those of the same name or
//     alias; HARNESSX_PRICES=off turns costs off ([FromEnv]). The option
//     wins over the variable.
//
// # The file format
//
//	{
//	  "format": 1,
//	  "as_of": "2026-12-01",
//	  "currency": "USD",                 (optional; only USD)
//	  "unit": "per million tokens",      (optional; only this)
//	  "notes": "where the prices come from",
//	  "models": [
//	    {"model": "claude-sonnet-4-5", "provider": "anthropic",
//	     "aliases": ["claude-sonnet-4-5-20250929"],
//	     "input": 3, "output": 15, "cache_read": 0.30, "cache_write": 3.75, "reasoning": 15,
//	     "long_context": {"above_input_tokens": 200000,
//	       "input": 6, "output": 22.50, "cache_read": 0.60, "cache_write": 7.50, "reasoning": 22.50}}
//	  ]
//	}
//
// input and output are required. A cache_read or cache_write left out is
// priced as input, a reasoning price left out as output: the ordinary
// tokens they are a part of, at no discount or surcharge. Unknown fields,
// negative prices, a name listed twice and syntax errors are errors that
// name the file, the line and column or the field
// (models[3] (gpt-5).cache_read).
//
// # Token semantics
//
// harness.Usage is inclusive: InputTokens counts every prompt token, the
// cache reads and writes among them, and OutputTokens counts the
// reasoning tokens. The providers normalise to it: Anthropic's API reports
// input_tokens without the cache reads and writes (providers/anthropic adds
// them), OpenAI's prompt_tokens already include the cached tokens and its
// completion_tokens the reasoning tokens. [Table.Cost] therefore prices
// InputTokens − cache reads − cache writes at the input price and
// OutputTokens − reasoning at the output price.
//
// harness.Usage.ImageInputTokens and AudioInputTokens, which a provider
// may report (OpenAI's prompt_tokens_details), are parts of InputTokens
// too. The table has no image or audio price: [Table.Cost] prices those
// tokens with the other input tokens, at the input price, which is how
// the vendors bill images for the table's models. A model that bills
// audio at a price of its own (OpenAI's gpt-audio models) is not in the
// built-in table.
package pricing
