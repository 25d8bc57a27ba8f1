package appdsl

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Bounds on what one DSL may expand to. YAML aliases can make a small file
// stand for an enormous tree ("billion laughs"); the copy below expands
// them and stops when they add more than maxAliasNodes nodes to what the
// file itself holds.
const (
	maxAliasNodes = 1 << 16
	maxDepth      = 128
)

// expand copies n with every alias replaced by a copy of its target, so the
// result is a plain tree that later steps (and the author's JSON writer) may
// walk freely. Plain scalars that YAML 1.1 reads as booleans (yes, no, on,
// off, …) get the !!bool tag: Dify loads DSL files with PyYAML's safe_load,
// which follows YAML 1.1, where yaml.v3 follows 1.2 and keeps them strings.
func expand(n *yaml.Node) (*yaml.Node, error) {
	budget := countNodes(n) + maxAliasNodes
	return expandNode(n, 0, &budget)
}

// countNodes counts the nodes the file spells out (an alias is one).
func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

func expandNode(n *yaml.Node, depth int, budget *int) (*yaml.Node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested more than %d levels deep", n.Line, maxDepth)
	}
	*budget--
	if *budget < 0 {
		return nil, fmt.Errorf("its aliases expand to more than %d YAML nodes beyond the file's own", maxAliasNodes)
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: alias without a target", n.Line)
		}
		return expandNode(n.Alias, depth+1, budget)
	}
	c := &yaml.Node{Kind: n.Kind, Style: n.Style, Tag: n.Tag, Value: n.Value, Line: n.Line, Column: n.Column}
	if n.Kind == yaml.ScalarNode {
		pyYAMLBool(c)
	}
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, 0, len(n.Content))
		for _, k := range n.Content {
			kc, err := expandNode(k, depth+1, budget)
			if err != nil {
				return nil, err
			}
			c.Content = append(c.Content, kc)
		}
	}
	return c, nil
}

// yaml11Bools are the plain scalars PyYAML's resolver reads as booleans.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "n": false, "N": false, "no": false, "No": false, "NO": false,
	"true": true, "True": true, "TRUE": true, "false": false, "False": false, "FALSE": false,
	"on": true, "On": true, "ON": true, "off": false, "Off": false, "OFF": false,
}

func pyYAMLBool(n *yaml.Node) {
	if n.Style != 0 || n.Tag != "!!str" {
		return
	}
	// PyYAML (YAML 1.1) leaves a lone y/n a string in its implicit
	// resolver's regexp ("yes|Yes|YES|no|No|NO|true|…|on|…|off|…").
	if n.Value == "y" || n.Value == "Y" || n.Value == "n" || n.Value == "N" {
		return
	}
	if b, ok := yaml11Bools[n.Value]; ok {
		n.Tag = "!!bool"
		n.Value = strconv.FormatBool(b)
	}
}

// get returns the value of key in mapping m (nil when m is not a mapping or
// has no such key) and the key node, for its line. Of duplicate keys the
// last wins, as in the dict PyYAML builds.
func get(m *yaml.Node, key string) (val, keyNode *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := len(m.Content) - 2; i >= 0; i -= 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1], m.Content[i]
		}
	}
	return nil, nil
}

// has reports whether mapping m has key.
func has(m *yaml.Node, key string) bool {
	_, k := get(m, key)
	return k != nil
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func isMap(n *yaml.Node) bool { return n != nil && n.Kind == yaml.MappingNode }
func isSeq(n *yaml.Node) bool { return n != nil && n.Kind == yaml.SequenceNode }

// isStr reports whether n is a YAML string (what Python sees as str).
func isStr(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str"
}

// truthy is Python truthiness of the value n loads as: Dify's importer keeps
// a feature only `if model_config.get(key)`.
func truthy(n *yaml.Node) bool {
	if isNull(n) {
		return false
	}
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		return len(n.Content) > 0
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!bool":
			return n.Value == "true"
		case "!!int", "!!float":
			f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
			return err != nil || f != 0
		case "!!str":
			return n.Value != ""
		}
	}
	return true
}

// pyStr is Python's str() of the scalar n loads as (Dify's importer does
// str(app_data.get("icon", ""))): None becomes "None", booleans "True" and
// "False".
func pyStr(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "None"
	case n.Kind != yaml.ScalarNode:
		return ""
	case n.ShortTag() == "!!bool":
		if n.Value == "true" {
			return "True"
		}
		return "False"
	}
	return n.Value
}

// Output nodes: the bodies are assembled as YAML nodes and rendered by the
// author package's ordered JSON writer, as app scenarios are.

func strNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func boolNode(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func intNode(i int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(i)}
}

func nullNode() *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}

// strOrNull is a nullable string field.
func strOrNull(s *string) *yaml.Node {
	if s == nil {
		return nullNode()
	}
	return strNode(*s)
}

func seqNode(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
}

func strSeq(items ...string) *yaml.Node {
	s := seqNode()
	for _, it := range items {
		s.Content = append(s.Content, strNode(it))
	}
	return s
}

// obj builds a mapping node whose keys keep the order they are added in.
type obj struct{ n *yaml.Node }

func newObj() obj { return obj{&yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}} }

func (o obj) set(key string, v *yaml.Node) obj {
	for i := 0; i+1 < len(o.n.Content); i += 2 {
		if o.n.Content[i].Value == key {
			o.n.Content[i+1] = v // Python's dict.update keeps the key's place
			return o
		}
	}
	o.n.Content = append(o.n.Content, strNode(key), v)
	return o
}

func (o obj) get(key string) *yaml.Node {
	v, _ := get(o.n, key)
	return v
}

// enabledObj is Dify's {"enabled": b} default of a feature switch.
func enabledObj(b bool) *yaml.Node { return newObj().set("enabled", boolNode(b)).n }
