package harness

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Instructions are named sections of the system prompt, from
// [ExtensionContext.Instructions]. The system prompt of every model
// request is the base prompt ([WithSystemPrompt]), then the sections in
// the order of their keys (byte-wise, so the order does not depend on
// when they were set), then the texts of the prompt providers, separated
// by blank lines. Sections are part of the prefix key's system part: a
// change shows as a cache break caused by "system".
//
// Unlike a prompt provider, a section is text, not a callback: it costs
// nothing per request and changes only when set. Its methods are safe for
// concurrent use; a change applies from the next model request.
type Instructions struct{ ec *ExtensionContext }

// instruction is one section; its identity tells a handle whether the
// section is still the one it set.
type instruction struct{ text string }

// Instructions returns the agent's prompt sections.
func (ec *ExtensionContext) Instructions() *Instructions { return &Instructions{ec} }

// Set sets the section key to text, replacing the key's text if it has
// one (its place is the key's, so it does not move). Closing the returned
// handle removes the section if it still holds this text; once another
// Set replaced it, the handle does nothing. An empty text keeps the key
// but adds nothing to the prompt. A key is 1 to 128 bytes of valid UTF-8
// without control characters; prefix it with your extension's name.
func (in *Instructions) Set(key, text string) (*Handle, error) {
	switch {
	case key == "" || len(key) > 128:
		return nil, fmt.Errorf("harness: instruction key %q: want 1 to 128 bytes", key)
	case !utf8.ValidString(key) || strings.IndexFunc(key, unicode.IsControl) >= 0:
		return nil, fmt.Errorf("harness: instruction key %q: want printable UTF-8", key)
	case !utf8.ValidString(text):
		return nil, errors.New("harness: instruction " + key + ": text is not valid UTF-8")
	}
	a := in.ec.agent
	e := &instruction{text}
	if err := a.lockReg(); err != nil {
		return nil, err
	}
	defer a.unlockReg()
	if a.reg.instructions == nil {
		a.reg.instructions = map[string]*instruction{}
	}
	a.reg.instructions[key] = e
	a.changed()
	return a.track(in.ec, func() {
		if a.reg.instructions[key] == e {
			delete(a.reg.instructions, key)
		}
	}), nil
}

// baseSystem returns the base prompt with the instruction sections. The
// caller holds regMu.
func (a *Agent) baseSystem() string {
	if len(a.reg.instructions) == 0 {
		return a.cfg.system
	}
	var b strings.Builder
	b.WriteString(a.cfg.system)
	for _, k := range slices.Sorted(maps.Keys(a.reg.instructions)) {
		text := a.reg.instructions[k].text
		if text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(text)
	}
	return b.String()
}
