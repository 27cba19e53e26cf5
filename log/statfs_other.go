//go:build !unix

package log

func diskSpace(string) (int64, int64) { return -1, -1 }
