package author

import (
	"math"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"
)

// Default prices, per token = unit price × price unit (Dify's LLMUsage,
// docs/api §2.5): 2.50 and 10.00 USD per million tokens.
const (
	defaultPromptUnitPrice     = "2.50"
	defaultCompletionUnitPrice = "10.00"
	defaultPriceUnit           = "0.000001"
	defaultCurrency            = "USD"
	// systemPromptTokens stands for the agent's instructions and tool
	// schemas, which every model request carries.
	systemPromptTokens = 180
)

func parseDecimal(s string) (*big.Rat, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "/eE") {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		return nil, false
	}
	return r, true
}

// priceString formats a price the way Dify quantizes Decimals: seven
// decimal places (docs/api §1.5: money is a string).
func priceString(r *big.Rat) string {
	return r.FloatString(7)
}

// estimateTokens is a rough, deterministic token count: about four ASCII
// characters per token, one token per other character.
func estimateTokens(s string) int64 {
	var ascii, other int64
	for _, r := range s {
		if r < utf8.RuneSelf {
			ascii++
		} else {
			other++
		}
	}
	return (ascii+3)/4 + other
}

// seconds rounds a duration to milliseconds, as a float of seconds.
func seconds(d time.Duration) float64 {
	return math.Round(float64(d.Milliseconds())) / 1000
}

// usageFacts are what the stream builder measured for usage.
type usageFacts struct {
	promptText     []string // query and texts fed back to the model
	completionText []string // thinking, tool inputs, answer
	rounds         int      // model requests (thought positions)
	firstToken     time.Duration
	hasFirstToken  bool
	end            time.Duration
}

// usageObject builds message_end.metadata.usage in Dify's key order
// (docs/api §2.5). full adds time_to_first_token and time_to_generate, which
// newer servers send (docs/api §21).
func usageObject(spec UsageSpec, f usageFacts, full bool) object {
	prompt := spec.PromptTokens
	if prompt == 0 {
		prompt = int64(systemPromptTokens * max(f.rounds, 1))
		for _, s := range f.promptText {
			prompt += estimateTokens(s)
		}
	}
	completion := spec.CompletionTokens
	if completion == 0 {
		for _, s := range f.completionText {
			completion += estimateTokens(s)
		}
	}
	orDefault := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	promptUnit := orDefault(spec.PromptUnitPrice, defaultPromptUnitPrice)
	completionUnit := orDefault(spec.CompletionUnitPrice, defaultCompletionUnitPrice)
	priceUnit := orDefault(spec.PriceUnit, defaultPriceUnit)
	currency := orDefault(spec.Currency, defaultCurrency)

	price := func(tokens int64, unit string) *big.Rat {
		u, _ := parseDecimal(unit)
		pu, _ := parseDecimal(priceUnit)
		r := new(big.Rat).SetInt64(tokens)
		r.Mul(r, u).Mul(r, pu)
		// Quantize to 7 places (half up) before summing, as Dify does.
		q, _ := new(big.Rat).SetString(r.FloatString(7))
		return q
	}
	pp := price(prompt, promptUnit)
	cp := price(completion, completionUnit)
	total := new(big.Rat).Add(pp, cp)

	latency := seconds(f.end)
	u := object{
		{"prompt_tokens", prompt},
		{"prompt_unit_price", promptUnit},
		{"prompt_price_unit", priceUnit},
		{"prompt_price", priceString(pp)},
		{"completion_tokens", completion},
		{"completion_unit_price", completionUnit},
		{"completion_price_unit", priceUnit},
		{"completion_price", priceString(cp)},
		{"total_tokens", prompt + completion},
		{"total_price", priceString(total)},
		{"currency", currency},
		{"latency", pyFloat(latency)},
	}
	if full {
		if f.hasFirstToken {
			ttft := seconds(f.firstToken)
			u = append(u,
				member{"time_to_first_token", pyFloat(ttft)},
				member{"time_to_generate", pyFloat(math.Round((latency-ttft)*1000) / 1000)})
		} else {
			u = append(u, member{"time_to_first_token", nil}, member{"time_to_generate", nil})
		}
	}
	return u
}
