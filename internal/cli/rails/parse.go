package rails

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// nicPrefix marks rails named in NIC order (NVIDIA's numbering).
const nicPrefix = "nic:"

// railsFlag is a parsed --rails: the rails, sorted, and whether they are
// numbered in NIC order.
type railsFlag struct {
	rails    []int64
	nicOrder bool
}

// parseRails reads --rails: "4,6" (Railyard's rails) or "nic:2,3" (NIC
// order); nil for "".
func parseRails(s string) (railsFlag, error) {
	if s == "" {
		return railsFlag{}, nil
	}
	list, nicOrder := strings.CutPrefix(s, nicPrefix)
	var out []int64
	for _, p := range strings.Split(list, ",") {
		r, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || r < 0 {
			return railsFlag{}, fmt.Errorf("--rails %q: want rail numbers like 4,6 (or nic:2,3 in NIC order)", s)
		}
		out = append(out, r)
	}
	slices.Sort(out)
	if len(slices.Compact(slices.Clone(out))) != len(out) {
		return railsFlag{}, fmt.Errorf("--rails %q names a rail twice", s)
	}
	return railsFlag{rails: out, nicOrder: nicOrder}, nil
}

// parseTolerations reads --toleration values, KEY[=VALUE][:EFFECT]: with
// a value the toleration matches that value only (Equal), without one any
// value (Exists); without an effect it matches both NoSchedule and
// NoExecute.
func parseTolerations(vals []string) ([]resourceapi.DeviceToleration, error) {
	var out []resourceapi.DeviceToleration
	for _, v := range vals {
		rest, effect, hasEffect := strings.Cut(v, ":")
		key, value, hasValue := strings.Cut(rest, "=")
		t := resourceapi.DeviceToleration{Key: key, Operator: resourceapi.DeviceTolerationOpExists}
		if hasValue {
			t.Operator, t.Value = resourceapi.DeviceTolerationOpEqual, value
			if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
				return nil, fmt.Errorf("--toleration %q: value: %s", v, strings.Join(errs, "; "))
			}
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("--toleration %q: want KEY[=VALUE][:EFFECT]; key: %s", v, strings.Join(errs, "; "))
		}
		if hasEffect {
			switch e := resourceapi.DeviceTaintEffect(effect); e {
			case resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute:
				t.Effect = e
			default:
				return nil, fmt.Errorf("--toleration %q: effect %q: want NoSchedule or NoExecute", v, effect)
			}
		}
		out = append(out, t)
	}
	if len(out) > resourceapi.DeviceTolerationsMaxLength {
		return nil, fmt.Errorf("--toleration: %d given, a request holds %d", len(out), resourceapi.DeviceTolerationsMaxLength)
	}
	return out, nil
}

// parseLabels reads KEY=VALUE label pairs (a --node-label).
func parseLabels(flag string, vals []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range vals {
		key, value, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flag, v)
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("%s %q: key: %s", flag, v, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return nil, fmt.Errorf("%s %q: value: %s", flag, v, strings.Join(errs, "; "))
		}
		out[key] = value
	}
	return out, nil
}
