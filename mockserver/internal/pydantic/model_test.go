package pydantic_test

import (
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
)

var testModel = pydantic.Model{
	Name: "TestPayload",
	Fields: []pydantic.Field{
		{Name: "name", Rule: pydantic.StrRule, Required: true},
		{Name: "flag", Rule: pydantic.BoolRule, Default: false},
		{Name: "note", Rule: pydantic.StrRule, Optional: true, Default: "none"},
		{Name: "mode", Rule: pydantic.Literal("a", "b"), Default: "a"},
	},
	Check: func(v pydantic.Values, d *pydantic.Dict) *pydantic.Error {
		if v.Str("name") == "forbidden" {
			return &pydantic.Error{Msg: "Value error, forbidden name", Type: "value_error", Input: d}
		}
		return nil
	},
}

func TestModelCollectsErrorsInFieldOrder(t *testing.T) {
	// The body names the fields in another order than the model: errors
	// follow the model, as pydantic's do.
	_, errs := testModel.Validate(pydantic.Body([]byte(`{"mode":"c","flag":"maybe","note":5}`)))
	var got []string
	for _, e := range errs {
		got = append(got, e.Loc+":"+e.Type)
	}
	if strings.Join(got, " ") != "name:missing flag:bool_parsing note:string_type mode:literal_error" {
		t.Fatalf("errors %v", got)
	}
	msg := pydantic.Message(testModel.Name, errs...)
	for _, want := range []string{
		"4 validation errors for TestPayload\nname\n  Field required [type=missing, input_value={'mode': 'c', 'flag': 'maybe', 'note': 5}, input_type=dict]",
		"mode\n  Input should be 'a' or 'b' [type=literal_error, input_value='c', input_type=str]",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

func TestModelDefaultsOptionalAndCheck(t *testing.T) {
	v, errs := testModel.Validate(pydantic.Body([]byte(`{"name":"x","note":null,"flag":"yes"}`)))
	if len(errs) != 0 || v.Str("note") != "none" || !v.Bool("flag") || v.Str("mode") != "a" || v.Str("name") != "x" {
		t.Fatalf("values %v errors %v", v, errs)
	}
	// null is a value for a field that is not Optional.
	if _, errs := testModel.Validate(pydantic.Body([]byte(`{"name":null}`))); len(errs) != 1 || errs[0].Type != "string_type" {
		t.Errorf("null name: %v", errs)
	}
	// The model validator runs only once the fields are valid.
	if _, errs := testModel.Validate(pydantic.Body([]byte(`{"name":"forbidden"}`))); len(errs) != 1 || errs[0].Loc != "" || errs[0].Type != "value_error" {
		t.Errorf("model validator: %v", errs)
	}
	if _, errs := testModel.Validate(pydantic.Body([]byte(`{"name":"forbidden","mode":"z"}`))); len(errs) != 1 || errs[0].Loc != "mode" {
		t.Errorf("model validator ran despite a field error: %v", errs)
	}
}

func TestQueryModel(t *testing.T) {
	m := pydantic.Model{Name: "Q", Fields: []pydantic.Field{
		{Name: "last_id", Rule: pydantic.UUIDRule, Default: "", EmptyIsAbsent: true},
		{Name: "limit", Rule: pydantic.IntRange(1, 100), Default: 20},
		{Name: "id", Rule: pydantic.UUIDStrOrEmpty, Default: ""},
	}}
	v, errs := m.Validate(pydantic.Query("last_id=&limit=05&id=%7BA1B2C3D4-E5F6-4789-8ABC-DEF012345678%7D&limit=7"))
	if len(errs) != 0 || v.Str("last_id") != "" || v.Int("limit") != 5 || v.Str("id") != "a1b2c3d4-e5f6-4789-8abc-def012345678" {
		t.Fatalf("values %v errors %v", v, errs)
	}
	_, errs = m.Validate(pydantic.Query("limit=0&last_id=nope&id=nope"))
	var got []string
	for _, e := range errs {
		got = append(got, e.Loc+":"+e.Type)
	}
	if strings.Join(got, " ") != "last_id:uuid_parsing limit:greater_than_equal id:value_error" {
		t.Errorf("errors %v", got)
	}
}

func TestListOfDictsReportsEachBadItem(t *testing.T) {
	m := pydantic.Model{Name: "P", Fields: []pydantic.Field{
		{Name: "files", Rule: pydantic.ListOfDicts, Optional: true},
		{Name: "inputs", Rule: pydantic.DictRule, Required: true},
	}}
	_, errs := m.Validate(pydantic.Body([]byte(`{"files":[{}, 3, "x"], "inputs": []}`)))
	var got []string
	for _, e := range errs {
		got = append(got, e.Loc+":"+e.Type)
	}
	if strings.Join(got, " ") != "files.1:dict_type files.2:dict_type inputs:dict_type" {
		t.Errorf("errors %v", got)
	}
	if v, errs := m.Validate(pydantic.Body([]byte(`{"files":null,"inputs":{"n":5.0}}`))); len(errs) != 0 || v.Set("files") {
		t.Errorf("null files: %v %v", v, errs)
	}
}
