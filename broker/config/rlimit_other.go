//go:build !unix

package config

func openFileLimit() uint64 { return 0 }
