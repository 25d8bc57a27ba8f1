package mockserver

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/control"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/similar"
)

// catalog is the loaded chat cassettes and everything derived from them.
// It never changes once built: reloading the cassette folder builds a new
// one and swaps it in (Server.ReloadCassettes), and a request takes one
// catalog at its start (Server.cat) and uses it throughout, so a reload
// never mixes two sets inside one request.
type catalog struct {
	set     *cassette.Set
	scripts map[string]*replay.Script
	names   []string // sorted
	def     string   // the default cassette
	exact   map[string]turnRef
	loose   map[string]turnRef
	// near indexes every recorded query for the nearest-turn match;
	// document k is nearRefs[k]. threshold is the score it must reach,
	// 0 when matching is exact only (Config.Match).
	near      *similar.Index
	nearRefs  []turnRef
	threshold float64
	// faults are the cassettes' dify_mock.fault.
	faults map[string]fault.Spec
}

// newCatalog compiles set; defaultName ("" = the set's) must be loaded.
// threshold is the nearest-turn match's (0 = exact matching only).
func newCatalog(set *cassette.Set, defaultName string, threshold float64, compile compileFunc) (*catalog, error) {
	if compile == nil {
		compile = replay.Compile
	}
	c := &catalog{set: set, scripts: map[string]*replay.Script{}, faults: map[string]fault.Spec{}, threshold: threshold}
	for _, name := range set.Names {
		cs, _ := set.Get(name)
		sc, err := compile(cs)
		if err != nil {
			return nil, err
		}
		c.scripts[name] = sc
		if cs.Meta.Fault != "" {
			spec, err := fault.Parse(cs.Meta.Fault)
			if err != nil {
				return nil, fmt.Errorf("%s: dify_mock.fault: %v. Known faults: %s", cs.Path, err, fault.Names())
			}
			c.faults[name] = spec
		}
	}
	c.names = append([]string(nil), set.Names...)
	sort.Strings(c.names)
	c.def = set.Default
	if defaultName != "" {
		if _, ok := c.scripts[defaultName]; !ok {
			return nil, fmt.Errorf("default cassette %q is not loaded (loaded: %v)", defaultName, c.names)
		}
		c.def = defaultName
	}
	c.indexQueries()
	return c, nil
}

// compileFunc compiles a cassette: replay.Compile, or a scriptCache's.
type compileFunc func(*cassette.Cassette) (*replay.Script, error)

// scriptCache compiles each cassette file once for all the apps a Server
// starts with: a hundred apps that keep the same file in their folders (a
// team's shared fixtures, the apps row of `make bench`) hold one compiled
// copy instead of a hundred, which was a tenth of the memory of 10,000
// streams over 100 apps. Compiled scripts are never changed (a catalog is
// replaced, not edited), so apps can share them. The cache lives while the
// Server is made; a reload compiles its folder afresh, so no version of a
// file outlives the catalogs that use it.
type scriptCache struct {
	byFile map[scriptKey]*replay.Script
}

type scriptKey struct {
	name   string
	digest [32]byte
}

// compile is replay.Compile, the script of an identical file (name and
// bytes) reused. A failure is not kept: each app reports its own path.
func (c *scriptCache) compile(cs *cassette.Cassette) (*replay.Script, error) {
	if cs.Digest == ([32]byte{}) {
		return replay.Compile(cs)
	}
	key := scriptKey{cs.Name, cs.Digest}
	if sc, ok := c.byFile[key]; ok {
		return sc, nil
	}
	sc, err := replay.Compile(cs)
	if err != nil {
		return nil, err
	}
	if c.byFile == nil {
		c.byFile = map[scriptKey]*replay.Script{}
	}
	c.byFile[key] = sc
	return sc, nil
}

// cat is the current catalog.
func (s *appServer) cat() *catalog { return s.catalog.Load() }

// ErrNoCassetteDir is returned by ReloadCassettes for a server that serves
// a set it did not load from a folder (the built-in cassettes).
var ErrNoCassetteDir = errors.New("this dify-mock serves the built-in cassettes; start it with --cassettes DIR to reload a folder")

// ReloadCassettes loads the cassette folder (ControlConfig.CassetteDir)
// again and swaps the new set in. On any error (a file that does not
// parse, two defaults, a bad fault spec) the loaded set stays as it was
// and the error says what is wrong. Conversations that were replaying a
// cassette that is gone continue with the normal selection. The app
// description is not reloaded.
func (s *appServer) ReloadCassettes() ([]string, error) {
	dir := s.cfg.Control.CassetteDir
	if dir == "" {
		return nil, ErrNoCassetteDir
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	set, err := cassette.LoadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(set.Names) == 0 && s.cfg.Upstream == nil {
		return nil, fmt.Errorf("%s has no chat cassettes", dir)
	}
	def := s.cfg.DefaultCassette
	if _, ok := set.Get(def); !ok {
		def = "" // the configured default is gone: the folder's own
	}
	c, err := newCatalog(set, def, s.matchThreshold(), nil)
	if err != nil {
		return nil, err
	}
	s.catalog.Store(c)
	s.log.Info("cassettes reloaded", "app", s.name, "dir", dir, "cassettes", len(c.names))
	if s.journal != nil {
		s.journal.Publish(control.EventCassettes, map[string]string{"app": s.name})
	}
	return append([]string(nil), c.names...), nil
}

// addCassette serves cs, a chat cassette hybrid mode has just written (a
// new one, or a longer version of one it wrote before), without reading
// the folder again: the new catalog shares every other cassette's compiled
// turns with the current one and only cs is compiled. The nearest-turn
// index is rebuilt from the recorded queries, which costs what parsing the
// queries costs, not what loading the files does.
func (s *appServer) addCassette(cs *cassette.Cassette) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	c, err := s.cat().withCassette(cs, s.cfg.DefaultCassette)
	if err != nil {
		return err
	}
	s.catalog.Store(c)
	s.log.Info("cassette added", "app", s.name, "cassette", cs.Name, "turns", len(cs.Turns), "cassettes", len(c.names))
	if s.journal != nil {
		s.journal.Publish(control.EventCassettes, map[string]string{"app": s.name})
	}
	return nil
}

// withCassette is c with cs added, or replacing the cassette of its name.
// configured is the configured default cassette (Config.DefaultCassette),
// which wins while it is loaded; otherwise the default is picked as
// cassette.LoadDir picks it: the one marked default, else the first name.
func (c *catalog) withCassette(cs *cassette.Cassette, configured string) (*catalog, error) {
	sc, err := replay.Compile(cs)
	if err != nil {
		return nil, err
	}
	n := &catalog{set: &cassette.Set{Cassettes: maps.Clone(c.set.Cassettes), Default: c.set.Default}, scripts: maps.Clone(c.scripts),
		faults: maps.Clone(c.faults), threshold: c.threshold}
	if c.set.App != nil {
		n.set.App = c.set.App
	}
	if n.set.Cassettes == nil {
		n.set.Cassettes = map[string]*cassette.Cassette{}
	}
	n.set.Cassettes[cs.Name] = cs
	n.scripts[cs.Name] = sc
	delete(n.faults, cs.Name)
	if cs.Meta.Fault != "" {
		spec, err := fault.Parse(cs.Meta.Fault)
		if err != nil {
			return nil, fmt.Errorf("%s: dify_mock.fault: %v. Known faults: %s", cs.Path, err, fault.Names())
		}
		n.faults[cs.Name] = spec
	}
	n.names = slices.Sorted(maps.Keys(n.scripts))
	n.set.Names = n.names
	var marked []string
	for _, name := range n.names {
		if n.set.Cassettes[name].Meta.Default {
			marked = append(marked, name)
		}
	}
	switch {
	case len(marked) > 1:
		return nil, fmt.Errorf("more than one cassette is marked default: %s", strings.Join(marked, ", "))
	case len(marked) == 1:
		n.set.Default = marked[0]
	default:
		n.set.Default = n.names[0]
	}
	n.def = n.set.Default
	if _, ok := n.scripts[configured]; ok && configured != "" {
		n.def = configured
	}
	n.indexQueries()
	return n, nil
}

// WatchCassettes starts reloading the cassette folder whenever its *.yaml
// files change (checked every interval) until the server shuts down. A
// reload that fails is logged and the loaded set is kept. Changes made
// after WatchCassettes returns are seen.
func (s *appServer) WatchCassettes(interval time.Duration) {
	dir := s.cfg.Control.CassetteDir
	if dir == "" {
		return
	}
	go s.watch(dir, folderSignature(dir), interval)
}

func (s *appServer) watch(dir, last string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
		}
		sig := folderSignature(dir)
		if sig == last {
			continue
		}
		last = sig
		if _, err := s.ReloadCassettes(); err != nil {
			s.log.Error("cassettes changed but were not reloaded (the loaded set is kept)", "dir", dir, "error", err)
			s.lastReloadErr.Store(err.Error())
		} else {
			s.lastReloadErr.Store("")
		}
	}
}

// folderSignature summarises the names, sizes and times of dir's *.yaml
// files; any change to them changes it.
func folderSignature(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s %d %d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String()
}

// matchThreshold is the catalog's nearest-turn threshold for Config.Match.
func (s *appServer) matchThreshold() float64 {
	if s.cfg.Match == MatchExact {
		return 0
	}
	return s.cfg.MatchThreshold
}
