//go:build amd64

#include "textflag.h"

// func pause()
TEXT ·pause(SB), NOSPLIT|NOFRAME, $0-0
	PAUSE
	RET
