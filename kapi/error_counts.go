package kapi

import (
	"reflect"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errorCounts counts the error codes of a response as Kafka's
// AbstractResponse.errorCounts does for RequestMetrics' ErrorsPerSec:
// every error code the response carries (its own and each topic's,
// partition's, group's... ), NONE included. Produce, Fetch and Metadata,
// the frequent ones with many partitions, are walked directly; the
// others by their ErrorCode fields (reflection, with a plan per type).
type errorCounts struct {
	n    int
	pair [8]struct {
		code  int16
		count int
	}
	more map[int16]int // past eight distinct codes
}

func (c *errorCounts) add(code int16) {
	for i := range c.n {
		if c.pair[i].code == code {
			c.pair[i].count++
			return
		}
	}
	if c.n < len(c.pair) {
		c.pair[c.n].code, c.pair[c.n].count = code, 1
		c.n++
		return
	}
	if c.more == nil {
		c.more = map[int16]int{}
	}
	c.more[code]++
}

func (c *errorCounts) each(fn func(code int16, n int)) {
	for i := range c.n {
		fn(c.pair[i].code, c.pair[i].count)
	}
	for code, n := range c.more {
		fn(code, n)
	}
}

// count adds resp's error codes.
func (c *errorCounts) count(resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				c.add(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.FetchResponse:
		c.add(r.ErrorCode)
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				c.add(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.MetadataResponse:
		for i := range r.Topics {
			c.add(r.Topics[i].ErrorCode)
			for j := range r.Topics[i].Partitions {
				c.add(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	default:
		v := reflect.ValueOf(resp)
		planFor(v.Type()).walk(v, c)
	}
}

// errorPlan is where a type holds error codes: its own ErrorCode field
// and the fields (structs, pointers to structs, slices of them) below
// that may hold more.
type errorPlan struct {
	ptr       bool
	errorCode int // the ErrorCode field's index; -1: none
	children  []errorChild
}

type errorChild struct {
	field int
	slice bool
	plan  *errorPlan
}

var errorPlans sync.Map // reflect.Type -> *errorPlan

func planFor(t reflect.Type) *errorPlan {
	if p, ok := errorPlans.Load(t); ok {
		return p.(*errorPlan)
	}
	p := buildPlan(t, map[reflect.Type]*errorPlan{})
	errorPlans.Store(t, p)
	return p
}

// buildPlan plans t; nil when nothing below t holds an error code.
// Recursive types (none in kmsg's responses) end at the type seen.
func buildPlan(t reflect.Type, seen map[reflect.Type]*errorPlan) *errorPlan {
	p := &errorPlan{errorCode: -1}
	if t.Kind() == reflect.Pointer {
		p.ptr, t = true, t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	if q, ok := seen[t]; ok {
		return q
	}
	seen[t] = p
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16:
			p.errorCode = i
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			if q := buildPlan(f.Type.Elem(), seen); q != nil {
				p.children = append(p.children, errorChild{field: i, slice: true, plan: q})
			}
		case f.Type.Kind() == reflect.Struct || f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
			if q := buildPlan(f.Type, seen); q != nil {
				p.children = append(p.children, errorChild{field: i, plan: q})
			}
		}
	}
	if p.errorCode < 0 && len(p.children) == 0 {
		seen[t] = nil
		return nil
	}
	return p
}

func (p *errorPlan) walk(v reflect.Value, c *errorCounts) {
	if p == nil {
		return
	}
	if p.ptr {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if p.errorCode >= 0 {
		c.add(int16(v.Field(p.errorCode).Int()))
	}
	for _, ch := range p.children {
		f := v.Field(ch.field)
		if !ch.slice {
			ch.plan.walk(f, c)
			continue
		}
		for i := range f.Len() {
			ch.plan.walk(f.Index(i), c)
		}
	}
}
