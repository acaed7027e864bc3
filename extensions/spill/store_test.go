package spill

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDirStore is the store contract, run on the directory store.
func TestDirStore(t *testing.T) {
	ctx := t.Context()
	s, err := NewDirStore(filepath.Join(t.TempDir(), "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id1, id2 := newID(), newID()
	steps := []struct {
		name string
		run  func() error
	}{
		{"put", func() error {
			n, err := PutBytes(ctx, s, id1, []byte("hello\nworld\n"))
			if err == nil && n != 12 {
				err = errors.New("wrong size")
			}
			return err
		}},
		{"put again is ErrExists", func() error {
			if _, err := PutBytes(ctx, s, id1, []byte("x")); !errors.Is(err, ErrExists) {
				return errors.New("second Put did not fail with ErrExists")
			}
			return nil
		}},
		{"put streaming", func() error {
			_, err := s.Put(ctx, id2, io.LimitReader(strings.NewReader(strings.Repeat("y", 1<<20)), 300_000))
			return err
		}},
		{"stat", func() error {
			info, err := s.Stat(ctx, id2)
			if err == nil && (info.Size != 300_000 || info.Path != filepath.Join(s.Dir(), id2)) {
				err = errors.New("wrong info")
			}
			return err
		}},
		{"open and read", func() error {
			f, err := s.Open(ctx, id1)
			if err != nil {
				return err
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			if err == nil && string(b) != "hello\nworld\n" {
				err = errors.New("wrong content")
			}
			return err
		}},
		{"list skips foreign files", func() error {
			if err := os.WriteFile(filepath.Join(s.Dir(), "notes.txt"), []byte("x"), 0o600); err != nil {
				return err
			}
			l, err := s.List(ctx)
			if err == nil && len(l) != 2 {
				err = errors.New("wrong list")
			}
			return err
		}},
		{"delete", func() error {
			if err := s.Delete(ctx, id1); err != nil {
				return err
			}
			if err := s.Delete(ctx, id1); err != nil {
				return errors.New("deleting twice failed")
			}
			if _, err := s.Open(ctx, id1); !errors.Is(err, fs.ErrNotExist) {
				return errors.New("open after delete is not ErrNotExist")
			}
			return nil
		}},
		{"cancelled put leaves nothing", func() error {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			id := newID()
			if _, err := PutBytes(cctx, s, id, []byte("x")); err == nil {
				return errors.New("put with a cancelled context succeeded")
			}
			ents, _ := os.ReadDir(s.Dir())
			for _, e := range ents {
				if strings.Contains(e.Name(), id) {
					return errors.New("partial file left: " + e.Name())
				}
			}
			return nil
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.run(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDirStoreConcurrent(t *testing.T) {
	s, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			id := newID()
			if _, err := PutBytes(t.Context(), s, id, []byte(id)); err != nil {
				t.Error(err)
				return
			}
			f, err := s.Open(t.Context(), id)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(f)
			f.Close()
			if string(b) != id {
				t.Errorf("read %q from %s", b, id)
			}
		})
	}
	wg.Wait()
}

// TestPathEscape checks that no id or planted link reaches a file outside
// the store.
func TestPathEscape(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	secret := filepath.Join(root, "secret")
	if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := NewDirStore(filepath.Join(root, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bad := []string{
		"", "..", "../secret", "../../etc/passwd", "/etc/passwd", secret,
		"res_../../secret", "res_0123456789abcdef0123456\x00", "res_0123456789abcdef/1234567",
		"res_0123456789abcdef\\1234567", "res_0123456789ABCDEF01234567", "res_0123456789abcdef012345678",
		"./res_0123456789abcdef01234567", "res_0123456789abcdef01234567/",
	}
	for _, id := range bad {
		t.Run(strings.ReplaceAll(id, "/", "_"), func(t *testing.T) {
			if ValidID(id) {
				t.Fatal("ValidID accepts it")
			}
			if _, err := s.Open(ctx, id); !errors.Is(err, ErrInvalidID) {
				t.Errorf("Open: %v", err)
			}
			if _, err := s.Stat(ctx, id); !errors.Is(err, ErrInvalidID) {
				t.Errorf("Stat: %v", err)
			}
			if err := s.Delete(ctx, id); !errors.Is(err, ErrInvalidID) {
				t.Errorf("Delete: %v", err)
			}
			if _, err := PutBytes(ctx, s, id, []byte("x")); !errors.Is(err, ErrInvalidID) {
				t.Errorf("Put: %v", err)
			}
		})
	}
	t.Run("planted symlink", func(t *testing.T) {
		id := newID()
		if err := os.Symlink(secret, filepath.Join(s.Dir(), id)); err != nil {
			t.Skip("no symlinks:", err)
		}
		if f, err := s.Open(ctx, id); err == nil {
			b, _ := io.ReadAll(f)
			f.Close()
			t.Fatalf("opened a link out of the store: %q", b)
		}
		if _, err := s.Stat(ctx, id); err == nil {
			t.Error("Stat accepted a link")
		}
	})
	t.Run("valid id never escapes", func(t *testing.T) {
		for range 100 {
			id := newID()
			if !ValidID(id) || filepath.Base(id) != id || strings.ContainsAny(id, `/\.`+"\x00") {
				t.Fatalf("generated id %q", id)
			}
		}
	})
	if b, _ := os.ReadFile(secret); string(b) != "top secret" {
		t.Error("the secret file changed")
	}
}

// TestStamp checks that a file's stamp is withheld while the file is
// freshly changed, stable afterwards, and different after a change.
func TestStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the racy window twice")
	}
	t.Parallel()
	s, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := newID()
	if _, err := PutBytes(t.Context(), s, id, []byte("version 1")); err != nil {
		t.Fatal(err)
	}
	st := func() string {
		info, err := s.Stat(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return info.Stamp
	}
	if got := st(); got != "" {
		t.Errorf("fresh file has stamp %q", got)
	}
	time.Sleep(racyWindow + 50*time.Millisecond)
	first := st()
	if first == "" || st() != first {
		t.Fatalf("stamp of an old file: %q then %q", first, st())
	}
	f, err := s.Open(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if f.Stamp() != first {
		t.Errorf("open file stamp %q, Stat stamp %q", f.Stamp(), first)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(s.Dir(), id), []byte("version 2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := st(); got != "" {
		t.Errorf("just changed file has stamp %q", got)
	}
	time.Sleep(racyWindow + 50*time.Millisecond)
	if got := st(); got == "" || got == first {
		t.Errorf("stamp after a change: %q (before %q)", got, first)
	}
}
