package spill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harnessx/harnessx/harness"
)

// StateVersion is the version of the session state the extension saves.
const StateVersion = 1

// state is the saved form: every stored result with its metadata and the
// directory of its store ("" for a caller's store without one).
type state struct {
	Version int           `json:"version"`
	Results []SavedResult `json:"results"`
}

// SavedResult is a result as a saved session records it: its metadata and
// the directory of its store ("" for a store that is not a directory, such
// as an S3 store).
type SavedResult struct {
	Meta
	Dir string `json:"dir,omitempty"`
}

// SavedResults returns the results recorded in a state that OnSaveSession
// saved (the value under "spill" in a saved session's extensions),
// validated as a load validates it. It is for programs that read sessions
// outside an agent, such as flightrec fetching the stored results that an
// incident bundle refers to.
func SavedResults(state json.RawMessage) ([]SavedResult, error) {
	st, err := decodeState(state)
	if err != nil {
		return nil, err
	}
	return st.Results, nil
}

// OnSaveSession records every stored result (id, tool, size, lines, type,
// SHA-256, store directory). From then on those results are retained: the
// default temporary directory keeps them at Close, since the session
// refers to them. Whoever keeps the session owns the files; a result that
// is gone when the session is loaded reads as a clear error. A snapshot
// (harness.AsSnapshot, as the flight recorder takes) retains nothing.
func (e *Extension) OnSaveSession(ctx context.Context, _ *harness.ExtensionContext) (any, error) {
	snapshot := harness.IsSnapshot(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	st := state{Version: StateVersion, Results: []SavedResult{}}
	e.idx.each(func(en *entry) bool {
		st.Results = append(st.Results, SavedResult{Meta: en.meta, Dir: en.dir})
		if !snapshot {
			e.saved[en.meta.ID] = true
		}
		return true
	})
	slices.SortFunc(st.Results, func(a, b SavedResult) int { return strings.Compare(a.ID, b.ID) })
	return st, nil
}

// StateVersion changes whenever the results OnSaveSession lists change
// (harness.StateVersioner): an engine snapshot between the steps of a
// durable run then encodes the list only after a result was stored.
func (e *Extension) StateVersion() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.version
}

// OnLoadSession restores the results of a saved state so that read_result
// can read them. Each is found in the extension's own store when it is
// there, or else in the directory recorded for it, opened read-only (never
// written or deleted). A result whose file is missing is listed but reads
// as an error; its SHA-256 is checked at the first read. The state's
// version and shape are validated: an invalid state fails the load.
func (e *Extension) OnLoadSession(ctx context.Context, _ *harness.ExtensionContext, raw json.RawMessage) error {
	st, err := decodeState(raw)
	if err != nil {
		return err
	}
	e.mu.Lock()
	own := e.store
	e.mu.Unlock()
	for _, r := range st.Results {
		en := entry{meta: r.Meta, dir: r.Dir}
		switch {
		case own != nil && statOK(ctx, own, r.ID):
			en.store = own
			en.dir = storeDir(own)
		case r.Dir != "":
			ds, err := e.restoredStore(r.Dir)
			if err != nil {
				en.missing = fmt.Sprintf("its directory %s cannot be opened: %v", r.Dir, err)
				break
			}
			en.store = ds
			if _, err := ds.Stat(ctx, r.ID); err != nil {
				en.missing = fmt.Sprintf("its file is gone from %s", r.Dir)
			}
		default:
			en.missing = "it was stored in a store that is not configured"
		}
		if en.missing != "" {
			e.log().Warn("spill: a result of the loaded session is unavailable", "id", r.ID, "reason", en.missing)
		}
		e.mu.Lock()
		e.idx.put(en)
		e.saved[r.ID] = true
		e.version++
		e.mu.Unlock()
	}
	return nil
}

func statOK(ctx context.Context, s Store, id string) bool {
	_, err := s.Stat(ctx, id)
	return err == nil
}

// restoredStore returns the read-only store over dir of a loaded session.
// It does not create dir.
func (e *Extension) restoredStore(dir string) (*DirStore, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ds := e.restored[dir]; ds != nil {
		return ds, nil
	}
	root, err := openRootNoCreate(dir)
	if err != nil {
		return nil, err
	}
	ds := &DirStore{dir: dir, root: root}
	e.restored[dir] = ds
	return ds, nil
}

// decodeState parses and validates a saved state.
func decodeState(raw json.RawMessage) (*state, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadState, fmt.Sprintf(format, args...))
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, bad("not a JSON object: %s", jsonError(err))
	}
	if head.Version == nil {
		return nil, bad("no version")
	}
	if *head.Version != StateVersion {
		return nil, bad("version %d; this extension reads version %d", *head.Version, StateVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var st state
	if err := dec.Decode(&st); err != nil {
		return nil, bad("%s", jsonError(err))
	}
	if st.Results == nil {
		return nil, bad("no results field")
	}
	seen := map[string]bool{}
	for i, r := range st.Results {
		switch {
		case !ValidID(r.ID):
			return nil, bad("result %d: invalid id %s", i, quote(r.ID))
		case seen[r.ID]:
			return nil, bad("result %d: duplicate id %s", i, r.ID)
		case r.Size < 0 || r.Lines < 0:
			return nil, bad("result %s: negative size or line count", r.ID)
		case !validSHA256(r.SHA256):
			return nil, bad("result %s: sha256 is not 64 lowercase hex digits", r.ID)
		case !r.Type.valid():
			return nil, bad("result %s: unknown type %s", r.ID, quote(string(r.Type)))
		case r.Dir != "" && (!filepath.IsAbs(r.Dir) || filepath.Clean(r.Dir) != r.Dir || strings.ContainsRune(r.Dir, 0)):
			return nil, bad("result %s: dir %s is not a clean absolute path", r.ID, quote(r.Dir))
		}
		seen[r.ID] = true
	}
	return &st, nil
}

func validSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func openRootNoCreate(dir string) (*os.Root, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return os.OpenRoot(dir)
}
