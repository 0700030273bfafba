package checker

import (
	"errors"
	"slices"
	"testing"
)

func TestCompose_InvalidBeatsInconclusiveBeatsValid(t *testing.T) {
	valid := Verdict{Duplicates: 1}
	doubt := Verdict{Inconclusive: []string{"w1's history lost 3 record(s)"}, Duplicates: 2}
	s1 := Verdict{Violations: []Violation{{Invariant: InvS1, Message: "terms 1 and 2 overlap"}}}
	cmd := Verdict{Violations: []Violation{{Invariant: InvCmdS1, Message: "two commands ran at once"}}}
	for _, tc := range []struct {
		name string
		in   []Verdict
		want string
		err  error
	}{
		{name: "valid and valid", in: []Verdict{valid, valid}, want: VerdictPass},
		{name: "inconclusive beats valid", in: []Verdict{valid, doubt}, want: VerdictInconclusive, err: ErrInconclusive},
		{name: "invalid beats valid", in: []Verdict{s1, valid}, want: VerdictFail, err: ErrViolations},
		{name: "invalid beats inconclusive", in: []Verdict{doubt, cmd}, want: VerdictFail, err: ErrViolations},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Compose(tc.in...)
			if got := v.Outcome(); got != tc.want {
				t.Fatalf("Outcome() = %s, want %s", got, tc.want)
			}
			if v.OK() != (tc.want == VerdictPass) {
				t.Errorf("OK() = %v for outcome %s", v.OK(), tc.want)
			}
			if err := v.Err(); (err == nil) != (tc.err == nil) || tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("Err() = %v, want one wrapping %v", err, tc.err)
			}
		})
	}
}

func TestCompose_KeepsEveryCheckersEvidenceInOrder(t *testing.T) {
	a := Verdict{Violations: []Violation{{Invariant: InvS1}}, Inconclusive: []string{"a"}, Duplicates: 2}
	b := Verdict{Violations: []Violation{{Invariant: InvCmdS1}, {Invariant: InvCmdS2}}, Inconclusive: []string{"b"}, Duplicates: 3}
	v := Compose(a, b)
	var invs []string
	for _, x := range v.Violations {
		invs = append(invs, x.Invariant)
	}
	if want := []string{InvS1, InvCmdS1, InvCmdS2}; !slices.Equal(invs, want) {
		t.Errorf("violations %v, want %v", invs, want)
	}
	if !slices.Equal(v.Inconclusive, []string{"a", "b"}) || v.Duplicates != 5 {
		t.Errorf("reasons %v and duplicates %d, want [a b] and 5", v.Inconclusive, v.Duplicates)
	}
}
