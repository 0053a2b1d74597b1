package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Helpers of the table's setters. Each returns the problem with the value;
// the loader adds the variable's name and the value.

func duration(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("is not a duration: want Go's syntax, such as 2s or 10m")
		}
		*field(c) = d
		return nil
	}
}

// positive is duration refusing zero, which is far likelier a slip than a
// wish: a zero grace period would let a run delete a VM mid-create, a zero
// threshold re-drive every unsettled document on every run, a zero backoff
// poll a provider in a busy loop.
func positive(field func(*Config) *time.Duration) func(*Config, string) error {
	parse := duration(field)
	return func(c *Config, v string) error {
		if err := parse(c, v); err != nil {
			return err
		}
		if *field(c) == 0 {
			return fmt.Errorf("must be longer than zero")
		}
		return nil
	}
}

func boolean(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("is not a boolean: want true or false")
		}
		*field(c) = b
		return nil
	}
}

func between(min, max int, field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < min || n > max {
			return fmt.Errorf("is not a whole number in %d-%d", min, max)
		}
		*field(c) = n
		return nil
	}
}

func atLeast(min int, field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			return fmt.Errorf("is not a whole number of at least %d", min)
		}
		*field(c) = n
		return nil
	}
}

// durationText is a default duration as people write it: 10m, not 10m0s.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// nonEmptyList reads a comma-separated list of at least one item, each
// read by parse; what the items are is said by what, for the error of an
// empty one.
func nonEmptyList[T any](what string, parse func([]string) ([]T, error), field func(*Config) *[]T) func(*Config, string) error {
	return func(c *Config, v string) error {
		items, err := parse(splitList(v))
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return fmt.Errorf("names no %s", what)
		}
		*field(c) = items
		return nil
	}
}
