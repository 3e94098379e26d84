// CEBUR128: libebur128 (Debian's libebur128-dev, MIT) — EBU R128 / ITU-R BS.1770 loudness and true peak.
#include <ebur128.h>
