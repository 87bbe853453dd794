package fabric

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/railyard-io/railyard/internal/fabric"
)

// keyFlags are the flags naming the label keys of the two levels: a
// scheme, and the key of the level the command writes.
type keyFlags struct {
	scheme, leafSet, unit string
}

// add registers --labels and, for the command's own level, --leaf-set-label
// (the publisher) or --unit-label (the unit writer).
func (k *keyFlags) add(cmd *cobra.Command, unit bool) {
	fl := cmd.Flags()
	fl.StringVar(&k.scheme, "labels", fabric.SchemeRailyard, "the levels' label keys: railyard ("+fabric.LeafSetLabel+", "+fabric.UnitLabel+
		") or topograph ("+fabric.TopographTier0+", "+fabric.TopographTier1+")")
	if unit {
		fl.StringVar(&k.unit, "unit-label", "", "the unit label's key (default: the --labels scheme's)")
		return
	}
	fl.StringVar(&k.leafSet, "leaf-set-label", "", "the leaf set label's key (default: the --labels scheme's)")
}

// resolve returns the scheme's keys with the flags' own, validated.
func (k keyFlags) resolve() (fabric.LabelKeys, error) {
	keys, err := fabric.SchemeKeys(k.scheme)
	if err != nil {
		return keys, fmt.Errorf("--labels: %w", err)
	}
	if k.leafSet != "" {
		keys.LeafSet = k.leafSet
	}
	if k.unit != "" {
		keys.Unit = k.unit
	}
	if err := keys.Validate(); err != nil {
		return keys, fmt.Errorf("label keys: %w", err)
	}
	return keys, nil
}
