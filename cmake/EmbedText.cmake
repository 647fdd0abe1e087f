# Turns one text file into a C++ function returning it: -DINPUT=file -DOUTPUT=x.cpp
# -DHEADER=include -DFUNCTION=qualified::name. Run by the build, not by hand.
file(READ "${INPUT}" text)
set(content "// Generated from ${INPUT} by cmake/EmbedText.cmake.\n#include \"${HEADER}\"\n\nconst std::string& ${FUNCTION}() {\n  static const std::string text = R\"herald_text(${text})herald_text\";\n  return text;\n}\n")
file(WRITE "${OUTPUT}.tmp" "${content}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
