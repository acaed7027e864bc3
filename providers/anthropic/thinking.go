package anthropic

import (
	"encoding/json"
	"errors"
)

// The Messages API requires the thinking blocks of a tool-use turn to come
// back unchanged: a thinking block with its signature, a redacted_thinking
// block with its encrypted data. The provider keeps what the part's text
// cannot hold in harness.Part.ProviderData, which sessions save, so a
// conversation loaded into another process (or another Provider value)
// still sends its thinking back.

// redactedThinkingText is the text of the reasoning part that stands for a
// redacted_thinking block: the API returns only encrypted data, which goes
// in the part's ProviderData.
const redactedThinkingText = "[redacted thinking]"

// thinkingData is the ProviderData of a reasoning part made from a
// thinking block (Signature set) or a redacted_thinking block
// (RedactedData set). Provider is always [Name]: ProviderData that another
// provider put on a reasoning part must not be sent to this API, which
// would reject a foreign signature.
//
//	{"provider":"anthropic","signature":"EqQBCgIYAh..."}
//	{"provider":"anthropic","redacted_data":"EmwKAhgBEg..."}
type thinkingData struct {
	Provider     string `json:"provider"`
	Signature    string `json:"signature,omitempty"`
	RedactedData string `json:"redacted_data,omitempty"`
}

// signedThinking returns the ProviderData of a thinking block with
// signature sig; nil when there is no signature, since such a block cannot
// be sent back.
func signedThinking(sig string) json.RawMessage {
	if sig == "" {
		return nil
	}
	return encodeThinking(thinkingData{Provider: Name, Signature: sig})
}

// redactedThinking returns the ProviderData of a redacted_thinking block
// holding data; nil when data is empty.
func redactedThinking(data string) json.RawMessage {
	if data == "" {
		return nil
	}
	return encodeThinking(thinkingData{Provider: Name, RedactedData: data})
}

func encodeThinking(d thinkingData) json.RawMessage {
	b, err := json.Marshal(d)
	if err != nil {
		// A struct of strings always encodes.
		panic("anthropic: encoding thinking data: " + err.Error())
	}
	return b
}

// Why a reasoning part is not sent back.
var (
	errNoThinkingData      = errors.New("no provider data")
	errMalformedThinking   = errors.New("provider data is not a JSON object")
	errForeignThinkingData = errors.New("provider data is not " + Name + "'s")
	errEmptyThinkingData   = errors.New("provider data has neither signature nor redacted data")
)

// decodeThinking reads the ProviderData of a reasoning part. It fails when
// the part carries nothing this provider wrote or nothing that can be sent
// back; the part is then left out of the request.
func decodeThinking(raw json.RawMessage) (thinkingData, error) {
	var d thinkingData
	if len(raw) == 0 {
		return d, errNoThinkingData
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return thinkingData{}, errMalformedThinking
	}
	switch {
	case d.Provider != Name:
		return thinkingData{}, errForeignThinkingData
	case d.Signature == "" && d.RedactedData == "":
		return thinkingData{}, errEmptyThinkingData
	}
	return d, nil
}
