package cni

import (
	"context"
	"testing"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/netops"
	"github.com/railyard-io/railyard/internal/netops/netopstest"
)

// ruleWatch is the fake Ops that, at every rule added, reads the record of
// the device from the state directory, as a DEL after a crash there would.
type ruleWatch struct {
	*netopstest.Fake
	store  state.Store
	key    string
	tables []int // the record's RailTable at each AddRule
	rules  []int // the table each rule selects
}

func (r *ruleWatch) AddRule(ctx context.Context, path string, rule netops.Rule) error {
	rec, err := r.store.Get(r.key)
	if err != nil {
		r.tables = append(r.tables, -1)
	} else {
		r.tables = append(r.tables, rec.RailTable)
	}
	r.rules = append(r.rules, rule.Table)
	return r.Fake.AddRule(ctx, path, rule)
}

// TestRailTableIsRecordedBeforeTheFirstRuleFake: when ADD adds a
// multi-rail rule, the record on disk already names the rule's table, so a
// DEL after a crash at that point removes it; ADD then writes the record
// once after IPAM (result, attached, table), and DEL leaves no rule.
func TestRailTableIsRecordedBeforeTheFirstRuleFake(t *testing.T) {
	w := newWorld(t)
	r := &ruleWatch{Fake: w.ops, store: state.Store{Dir: w.stateDir}, key: vfPCI}
	p := w.plugin()
	p.Ops = r
	a := args("c1", pod1, "net1", w.conf(vfPCI, nil))
	if _, err := p.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	if len(r.rules) == 0 {
		t.Fatal("ADD added no multi-rail rule")
	}
	for i, table := range r.rules {
		if r.tables[i] != table {
			t.Errorf("rule %d selects table %d; the record then named %d", i, table, r.tables[i])
		}
	}
	rec, err := r.store.Get(vfPCI)
	if err != nil || rec.Phase != state.PhaseAttached || rec.RailTable != r.rules[0] {
		t.Fatalf("record after ADD: %+v, %v", rec, err)
	}
	if err := p.Del(ctx, a); err != nil {
		t.Fatal(err)
	}
	w.assertPristine()
}
