// The Pipe language: declarative ML input pipelines with the model and training setup that consume them.
//
// docs/language.md describes every construct; compiler/front/ast_builder.cpp turns this parse tree into
// the AST (each visitor method carries the rule it handles as a comment). Keywords are contextual: the
// words that start a declaration (`source`, `pipeline`, `model`, `train`, ...) are still usable as names
// elsewhere, because specs naturally say `pipeline train = ...` and `data = train`.
grammar Pipe;

// ---------------------------------------------------------------------------------------------------
// Declarations

program : item* EOF ;

item
  : importDecl
  | constDecl
  | fnDecl
  | sourceDecl
  | pipelineDecl
  | modelDecl
  | trainDecl
  ;

// import "path/to/file.pipe"   |   import stdlib_module
importDecl : IMPORT (STRING | name) ;

// const NAME (: type)? = expr
constDecl : CONST name (COLON type)? ASSIGN expr ;

// fn NAME(param: type, ...) -> type = expr   |   fn NAME(...) -> type { stmts; expr }
fnDecl : FN name LPAREN paramList? RPAREN (ARROW type)? (ASSIGN expr | block) ;

paramList : param (COMMA param)* COMMA? ;
param     : name COLON type ;

// source NAME = call(...) { field: type (= default)? ... }
sourceDecl : SOURCE name ASSIGN expr schema? ;
schema     : LBRACE (schemaField (COMMA | SEMI)?)* RBRACE ;
schemaField: name COLON type (ASSIGN expr)? ;

// pipeline NAME = source | stage | stage ...
pipelineDecl : PIPELINE name ASSIGN expr ;

// model NAME(input: type, ...) -> type { stmts; expr }
modelDecl : MODEL name LPAREN paramList? RPAREN (ARROW type)? block ;

// train NAME = { key = expr ... }
trainDecl : TRAIN name ASSIGN LBRACE (trainEntry (COMMA | SEMI)?)* RBRACE ;
trainEntry: name ASSIGN expr ;

// ---------------------------------------------------------------------------------------------------
// Types: f32, u8[1552], f32[8, 8, 24], i64[?] (variable length), bytes[194] (fixed byte length)

type : name (LBRACK dim (COMMA dim)* RBRACK)? ;
dim  : INT | QUESTION | name ;

// ---------------------------------------------------------------------------------------------------
// Statements inside blocks: `name = expr`, optionally separated by `;`

block : LBRACE (stmt SEMI?)* expr SEMI? RBRACE ;
stmt  : name ASSIGN expr ;

// ---------------------------------------------------------------------------------------------------
// Expressions. ANTLR gives earlier alternatives higher precedence, so the list runs from the tightest
// binding (calls, indexing) to the loosest (the pipe, then lambdas). `|` is the pipe: `a | f(x)` applies
// stage, layer or function f to a. Bitwise or is the function bit_or(a, b) so that `|` means one thing.

expr
  : expr LPAREN argList? RPAREN                              # callExpr
  | expr LBRACK index (COMMA index)* COMMA? RBRACK           # indexExpr
  | expr DOT name                                            # memberExpr
  | <assoc = right> expr POW expr                            # powExpr
  | op=(MINUS | BANG | TILDE | PLUS) expr                    # unaryExpr
  | expr op=(STAR | SLASH | SLASHSLASH | PERCENT) expr        # mulExpr
  | expr op=(PLUS | MINUS) expr                              # addExpr
  | expr op=(SHL | SHR) expr                                 # shiftExpr
  | expr op=(AMP | CARET) expr                               # bitExpr
  | expr op=(EQ | NE | LT | LE | GT | GE) expr                # compareExpr
  | expr ANDAND expr                                         # andExpr
  | expr OROR expr                                           # orExpr
  | expr PIPE expr                                           # pipeExpr
  | lambdaParams FATARROW (block | expr)                     # lambdaExpr
  | primary                                                  # primaryExpr
  ;

lambdaParams : name | LPAREN (name (COMMA name)*)? RPAREN ;

argList : arg (COMMA arg)* COMMA? ;
arg     : (name ASSIGN)? expr ;

// x[i], x[a:b], x[a:b:s], x[:, :, [0, 4, 8]], x[..., 0]
index
  : ELLIPSIS                                  # ellipsisIndex
  | start=expr? COLON stop=expr? (COLON step=expr?)?  # sliceIndex
  | expr                                      # exprIndex
  ;

primary
  : INT                                                  # intLiteral
  | FLOAT                                                # floatLiteral
  | STRING                                               # stringLiteral
  | (TRUE | FALSE)                                       # boolLiteral
  | LBRACK (expr (COMMA expr)* COMMA?)? RBRACK           # listLiteral
  | LBRACE recordField (COMMA recordField)* COMMA? RBRACE  # recordLiteral
  | block                                                # blockExpr
  | LPAREN expr RPAREN                                   # parenExpr
  | name                                                 # nameRef
  ;

recordField : name (COLON expr)? ;

// Contextual keywords are names everywhere but at the start of a declaration.
name : ID | IMPORT | CONST | FN | SOURCE | PIPELINE | MODEL | TRAIN ;

// ---------------------------------------------------------------------------------------------------
// Lexer

IMPORT   : 'import' ;
CONST    : 'const' ;
FN       : 'fn' ;
SOURCE   : 'source' ;
PIPELINE : 'pipeline' ;
MODEL    : 'model' ;
TRAIN    : 'train' ;
TRUE     : 'true' ;
FALSE    : 'false' ;

FATARROW   : '=>' ;
ARROW      : '->' ;
ELLIPSIS   : '...' ;
EQ         : '==' ;
NE         : '!=' ;
LE         : '<=' ;
GE         : '>=' ;
SHL        : '<<' ;
SHR        : '>>' ;
OROR       : '||' ;
ANDAND     : '&&' ;
POW        : '**' ;
SLASHSLASH : '//' ;
ASSIGN     : '=' ;
LT         : '<' ;
GT         : '>' ;
PIPE       : '|' ;
AMP        : '&' ;
CARET      : '^' ;
PLUS       : '+' ;
MINUS      : '-' ;
STAR       : '*' ;
SLASH      : '/' ;
PERCENT    : '%' ;
BANG       : '!' ;
TILDE      : '~' ;
QUESTION   : '?' ;
COLON      : ':' ;
SEMI       : ';' ;
COMMA      : ',' ;
DOT        : '.' ;
LPAREN     : '(' ;
RPAREN     : ')' ;
LBRACK     : '[' ;
RBRACK     : ']' ;
LBRACE     : '{' ;
RBRACE     : '}' ;

// 10_000, 0x1F, 0b1010; 1e-3, 0.5, 2.5e+4
FLOAT  : DIGITS '.' DIGITS EXPONENT? | DIGITS EXPONENT ;
INT    : DIGITS | '0x' [0-9a-fA-F_]+ | '0b' [01_]+ ;
fragment DIGITS   : [0-9] [0-9_]* ;
fragment EXPONENT : [eE] [+-]? [0-9]+ ;

STRING : '"' (~["\\\r\n] | '\\' .)* '"' ;
ID     : [a-zA-Z_] [a-zA-Z_0-9]* ;

COMMENT : '#' ~[\r\n]* -> channel(HIDDEN) ;
NEWLINE : ('\r'? '\n' | '\r') -> channel(HIDDEN) ;
WS      : [ \t\f]+ -> channel(HIDDEN) ;

// Anything else is one bad character; the parser reports it with its location.
BAD_CHAR : . ;
