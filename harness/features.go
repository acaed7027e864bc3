package harness

import (
	"errors"
	"fmt"
	"slices"
)

// Feature names an ability of the engine that an extension may rely on.
// An extension written for several engines (or engine versions) asks
// [ExtensionContext.Supports] before it uses one that may be missing.
type Feature string

// The features this engine knows. Supports reports false for any other
// name, so a portable extension can ask about features that this engine
// does not have yet.
const (
	// FeatureStorage: [ExtensionContext.Storage], a durable key-value
	// store. Present unless the agent has neither a state directory nor a
	// storage backend (WithStateDir("") without [WithStorage]).
	FeatureStorage Feature = "storage"
	// FeatureDeferredTools: tools with [Tool.Deferred], offered once the
	// session activates them ([Agent.Tools], [ActivateTools]). Always present.
	FeatureDeferredTools Feature = "deferred_tools"
	// FeatureToolTransforms: [ExtensionContext.TransformTools]. Always present.
	FeatureToolTransforms Feature = "tool_transforms"
	// FeatureInstructions: [ExtensionContext.Instructions]. Always present.
	FeatureInstructions Feature = "instructions"
	// FeatureCommands: [ExtensionContext.RegisterCommand]. Always present.
	FeatureCommands Feature = "commands"
	// FeatureToolUpdates: [Update] and [EventToolUpdate]. Always present.
	FeatureToolUpdates Feature = "tool_updates"
	// FeatureDurableAsks: [AskUser] parks questions durably: the agent has
	// a [StepRunner] that implements [Asker] (a durable runtime).
	FeatureDurableAsks Feature = "durable_asks"
	// FeatureAsks: [AskUser] can reach someone: the agent has an answerer
	// ([WithAsker]) or a StepRunner that implements Asker. An extension
	// that only needs an answer, durable or not (an MCP client that
	// offers elicitation to servers), asks for this one.
	FeatureAsks Feature = "asks"
)

// UnsupportedError reports the use of a [Feature] that the engine lacks.
// It matches [errors.ErrUnsupported] with errors.Is.
type UnsupportedError struct {
	Feature Feature
	// Hint says how to get the feature, when there is a way.
	Hint string
}

// Error names the feature and says how to get it.
func (e *UnsupportedError) Error() string {
	msg := fmt.Sprintf("harness: feature %q is not supported by this agent", e.Feature)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Unwrap returns [errors.ErrUnsupported].
func (e *UnsupportedError) Unwrap() error { return errors.ErrUnsupported }

// supports reports whether the agent has f, and if not, how to get it.
func (a *Agent) supports(f Feature) (bool, string) {
	switch f {
	case FeatureStorage:
		return a.store != nil, "configure a state directory with WithStateDir or a backend with WithStorage"
	case FeatureDeferredTools, FeatureToolTransforms, FeatureInstructions, FeatureCommands, FeatureToolUpdates:
		return true, ""
	case FeatureDurableAsks:
		_, ok := a.cfg.steps.(Asker)
		return ok, "install a StepRunner that implements Asker, such as the durable runtime's, with WithStepRunner"
	case FeatureAsks:
		_, ok := a.cfg.steps.(Asker)
		return ok || a.cfg.answer != nil, "install an answerer with WithAsker, or a StepRunner that implements Asker with WithStepRunner"
	}
	return false, ""
}

// Supports reports whether the engine offers f to this extension. An
// extension that checked a feature with Supports is trusted to cope
// without it: using the missing feature then only returns errors. An
// extension that uses a missing feature without asking first fails its
// install (see [ExtensionContext.Require]).
func (ec *ExtensionContext) Supports(f Feature) bool {
	ok, _ := ec.agent.supports(f)
	ec.mu.Lock()
	if ec.checked == nil {
		ec.checked = map[Feature]bool{}
	}
	ec.checked[f] = true
	ec.mu.Unlock()
	return ok
}

// Require declares that the extension needs features: it returns an
// [*UnsupportedError] naming the first one the engine lacks, and nil
// when all are present. Called during Install, a missing feature fails
// the install with that error even if Install then returns nil, so that
// an extension cannot be half installed on an engine that cannot run it.
// An extension whose tools must park their questions durably requires
// [FeatureDurableAsks]; one that only needs them answered, [FeatureAsks].
func (ec *ExtensionContext) Require(features ...Feature) error {
	for _, f := range features {
		if ok, hint := ec.agent.supports(f); !ok {
			err := &UnsupportedError{Feature: f, Hint: hint}
			ec.mu.Lock()
			if ec.installing {
				ec.unmet = append(ec.unmet, err)
			}
			ec.mu.Unlock()
			return err
		}
	}
	return nil
}

// use is called by the methods that need f. It returns nil when the
// engine has f; otherwise the error, which also fails the install when
// the extension did not check f with Supports first.
func (ec *ExtensionContext) use(f Feature) error {
	ok, hint := ec.agent.supports(f)
	if ok {
		return nil
	}
	err := &UnsupportedError{Feature: f, Hint: hint}
	ec.mu.Lock()
	if ec.installing && !ec.checked[f] {
		ec.unmet = append(ec.unmet, err)
	}
	ec.mu.Unlock()
	return err
}

// unmetErr returns the features used during Install that the engine
// lacks, joined, or nil.
func (ec *ExtensionContext) unmetErr() error {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	if len(ec.unmet) == 0 {
		return nil
	}
	errs := make([]error, 0, len(ec.unmet))
	var seen []Feature
	for _, e := range ec.unmet {
		if !slices.Contains(seen, e.Feature) {
			seen = append(seen, e.Feature)
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}
