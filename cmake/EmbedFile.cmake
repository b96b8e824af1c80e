# cmake -DIN=<file> -DOUT=<file.c> -DSYMBOL=<name> -P EmbedFile.cmake
# Writes a C source defining `const unsigned char SYMBOL[]` (8-byte aligned)
# and `const size_t SYMBOL_size` with the bytes of IN.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR size "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUT}.tmp" "/* generated from ${IN} by cmake/EmbedFile.cmake: do not edit */\n#include <stddef.h>\nextern const unsigned char ${SYMBOL}[];\nextern const size_t ${SYMBOL}_size;\n_Alignas(8) const unsigned char ${SYMBOL}[] = {\n${body}\n};\nconst size_t ${SYMBOL}_size = ${size};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
